"""Documents of a knowledge base (docs/api.md, "Knowledge bases"): upload as JSON or multipart, the accepted types,
the size limit, failures that never half-index, re-upload, delete, and the background task."""

from __future__ import annotations

import itertools
from io import StringIO

import pytest
from django.core.management import call_command

from knowledge.models import Chunk, Document
from tests.conftest import assert_error
from tests.knowledge.conftest import add_text, create_base, documents, query, upload
from tests.knowledge.pdf import make_pdf

pytestmark = pytest.mark.django_db

MARKDOWN = """# Travel policy

Book trains for trips under four hours.

## Expenses

Keep every receipt; the quokka clause pays for meals abroad.
"""


@pytest.fixture
def base(admin_client):
    return create_base(admin_client, "handbook")


def test_json_upload_is_indexed_and_listed(admin_client, base):
    response = add_text(admin_client, "handbook", "Leave", "Annual leave is 25 days.", sourceUrl="https://intra/leave")
    document = response.json()["document"]
    assert response.status_code == 200, response.json()
    assert document["title"] == "Leave" and document["sourceUrl"] == "https://intra/leave"
    assert document["mimeType"] == "text/plain" and document["size"] == len(b"Annual leave is 25 days.")
    assert document["status"] == "indexed" and document["chunkCount"] == 1
    assert "error" not in document and document["createDate"] and document["documentId"]
    assert documents(admin_client, "handbook") == [document]
    assert admin_client.get("/api/chat-admin/knowledge-base/handbook").json()["knowledgeBase"]["chunkCount"] == 1


def test_multipart_upload_takes_its_type_from_the_file_and_its_title_from_the_name(admin_client, base):
    response = upload(
        admin_client, "handbook", "travel.md", MARKDOWN.encode(), "application/octet-stream", sourceUrl="https://intra/travel"
    )
    document = response.json()["document"]
    assert response.status_code == 200, response.json()
    assert document["title"] == "travel.md" and document["mimeType"] == "text/markdown"
    assert document["status"] == "indexed" and document["chunkCount"] == 2  # one chunk per section
    best = query(admin_client, "handbook", "quokka receipts")[0]
    assert best["title"] == "travel.md" and best["sourceUrl"] == "https://intra/travel"
    assert best["text"].startswith("## Expenses") and "Book trains" not in best["text"]
    assert best["chunkId"] == f"{document['documentId']}:1" and best["documentId"] == document["documentId"]


def test_html_is_indexed_as_its_visible_text_and_markup_is_not_searchable(admin_client, base):
    html = b"""<html><head><title>Ignored</title><style>.zanzibar { color: red }</style></head>
    <body><h1>Office hours</h1><p class="kiwistyle">Open from <b>nine</b> to five &amp; closed on Sundays.</p>
    <script>var platypus = 1;</script><a href="https://wombat.example">the map</a></body></html>"""
    response = upload(admin_client, "handbook", "hours.html", html, "text/html")
    assert response.json()["document"]["status"] == "indexed", response.json()
    (result,) = query(admin_client, "handbook", "nine five closed")
    assert result["text"] == "Office hours\n\nOpen from nine to five & closed on Sundays.\n\nthe map"
    for markup in ("kiwistyle", "zanzibar", "platypus", "wombat", "href", "class", "script"):
        assert query(admin_client, "handbook", markup) == [], markup


def test_a_pdf_made_here_is_indexed_with_its_text_layer(admin_client, base):
    pdf = make_pdf(["Safety manual\nWear a helmet on site.", "Fire drills happen every second Tuesday (afternoon)."])
    response = upload(admin_client, "handbook", "safety.pdf", pdf, "application/pdf", title="Safety manual")
    document = response.json()["document"]
    assert document["status"] == "indexed" and document["mimeType"] == "application/pdf", document
    assert document["chunkCount"] == 2  # one per page
    best = query(admin_client, "handbook", "fire drills Tuesday")[0]
    assert best["title"] == "Safety manual" and best["text"] == "Fire drills happen every second Tuesday (afternoon)."
    assert Chunk.objects.get(text=best["text"]).page == 2


def test_a_file_that_cannot_be_read_ends_failed_with_the_reason_and_no_chunk(admin_client, base):
    broken = upload(admin_client, "handbook", "broken.pdf", b"%PDF-1.4 this is not a pdf", "application/pdf").json()["document"]
    assert broken["status"] == "failed" and broken["chunkCount"] == 0
    assert "not a readable PDF" in broken["error"] or "no text layer" in broken["error"], broken
    latin1 = upload(admin_client, "handbook", "old.txt", "café".encode("latin-1"), "text/plain").json()["document"]
    assert latin1["status"] == "failed" and "not UTF-8" in latin1["error"]
    empty = upload(admin_client, "handbook", "empty.txt", b"   \n\n ", "text/plain").json()["document"]
    assert empty["status"] == "failed" and empty["error"] == "the document holds no text"
    scanned = upload(admin_client, "handbook", "scan.pdf", make_pdf([""]), "application/pdf").json()["document"]
    assert scanned["status"] == "failed" and "no text layer" in scanned["error"]
    assert not Chunk.objects.exists()
    assert {d["status"] for d in documents(admin_client, "handbook")} == {"failed"}


def test_other_types_are_400_naming_the_accepted_ones(admin_client, base):
    response = upload(admin_client, "handbook", "sheet.xlsx", b"PK\x03\x04", "application/vnd.ms-excel")
    assert_error(response, 400, "INVALID_REQUEST", mentions="text/plain, text/markdown, text/html, application/pdf")
    assert "file:" in response.json()["error"]
    response = add_text(admin_client, "handbook", "t", "x", mimeType="application/pdf")
    assert_error(response, 400, mentions="document.mimeType: must be text/plain, text/markdown or text/html")
    assert not Document.objects.exists()


def test_over_the_size_limit_is_413(admin_client, base, settings):
    settings.CHAT_KB_MAX_DOCUMENT_BYTES = 100
    assert_error(upload(admin_client, "handbook", "big.txt", b"x" * 101, "text/plain"), 413, "PAYLOAD_TOO_LARGE", mentions="100 bytes")
    assert_error(add_text(admin_client, "handbook", "big", "y" * 101), 413, "PAYLOAD_TOO_LARGE")
    big_body = upload(admin_client, "handbook", "huge.txt", b"z" * (100 + 70 * 1024), "text/plain")
    assert_error(big_body, 413, "PAYLOAD_TOO_LARGE", mentions="body:")  # refused before it is read
    assert upload(admin_client, "handbook", "ok.txt", b"x" * 100, "text/plain").json()["document"]["status"] == "indexed"
    assert Document.objects.count() == 1


@pytest.mark.parametrize(
    ("document", "mentions"),
    [
        ({"text": "t"}, "document.title: is required"),
        ({"title": "", "text": "t"}, "document.title: must not be blank"),
        ({"title": "t"}, "document.text: is required"),
        ({"title": "t", "text": 5}, "document.text: must be a string"),
        ({"title": "t", "text": "x", "sourceUrl": 5}, "document.sourceUrl: must be a string"),
        ({"title": "t" * 501, "text": "x"}, "document.title: must be at most 500"),
        ({"title": "t", "text": "x", "tags": []}, "document.tags: is not a field of a document"),
    ],
)
def test_bad_json_documents_are_400_naming_the_field(admin_client, base, document, mentions):
    response = admin_client.post("/api/chat-admin/knowledge-base/handbook/documents", {"document": document}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions=mentions)
    assert not Document.objects.exists()


def test_multipart_without_a_file_and_unknown_bases(admin_client, base):
    response = admin_client.post("/api/chat-admin/knowledge-base/handbook/documents", {"title": "x"}, format="multipart")
    assert_error(response, 400, mentions="file: is required")
    assert_error(add_text(admin_client, "nope", "t", "x"), 404, "NOT_FOUND", mentions="knowledge base nope")
    assert_error(admin_client.get("/api/chat-admin/knowledge-base/nope/documents"), 404, "NOT_FOUND")
    assert_error(admin_client.post("/api/chat-admin/knowledge-base/handbook/documents", {}, format="json"), 400, mentions="document")


def test_reupload_with_the_same_source_url_or_title_replaces_the_document(admin_client, base):
    first = add_text(admin_client, "handbook", "Leave v1", "The ocelot rule gives 20 days.", sourceUrl="https://intra/leave").json()
    second = add_text(admin_client, "handbook", "Leave v2", "The margay rule gives 25 days.", sourceUrl="https://intra/leave").json()
    assert second["document"]["documentId"] != first["document"]["documentId"]
    assert [d["title"] for d in documents(admin_client, "handbook")] == ["Leave v2"]
    assert query(admin_client, "handbook", "ocelot") == []
    assert query(admin_client, "handbook", "margay")[0]["title"] == "Leave v2"

    add_text(admin_client, "handbook", "Holidays", "Tapir day is a holiday.")
    add_text(admin_client, "handbook", "Holidays", "Serval day is a holiday.")
    assert sorted(d["title"] for d in documents(admin_client, "handbook")) == ["Holidays", "Leave v2"]
    assert query(admin_client, "handbook", "tapir") == [] and len(query(admin_client, "handbook", "serval")) == 1
    assert Chunk.objects.count() == 2


def test_a_failed_reupload_keeps_the_indexed_version(admin_client, base):
    add_text(admin_client, "handbook", "Manual", "The caracal procedure.", sourceUrl="https://intra/manual")
    upload(admin_client, "handbook", "manual.pdf", b"%PDF-garbage", "application/pdf", sourceUrl="https://intra/manual")
    assert sorted(d["status"] for d in documents(admin_client, "handbook")) == ["failed", "indexed"]
    assert query(admin_client, "handbook", "caracal")[0]["title"] == "Manual"


def test_delete_removes_the_document_and_every_chunk(admin_client, base):
    long_text = "\n\n".join(f"Paragraph {i} about the narwhal budget and its many line items, explained at length." * 3 for i in range(40))
    document = add_text(admin_client, "handbook", "Budget", long_text).json()["document"]
    add_text(admin_client, "handbook", "Other", "Nothing about sea creatures.")
    assert document["chunkCount"] > 5
    response = admin_client.delete(f"/api/chat-admin/knowledge-base/handbook/documents/{document['documentId']}")
    assert response.json() == {"success": True}
    assert query(admin_client, "handbook", "narwhal budget") == []
    assert [d["title"] for d in documents(admin_client, "handbook")] == ["Other"]
    assert Chunk.objects.count() == 1
    missing = admin_client.delete(f"/api/chat-admin/knowledge-base/handbook/documents/{document['documentId']}")
    assert_error(missing, 404, "NOT_FOUND", mentions="not found in knowledge base handbook")
    assert_error(admin_client.delete("/api/chat-admin/knowledge-base/handbook/documents/not-a-uuid"), 404, "NOT_FOUND")


def test_long_sections_are_cut_with_overlap_and_every_chunk_is_a_span_of_the_text(admin_client, base):
    sentences = " ".join(f"Sentence number {i} of the lemur section says something." for i in range(60))
    text = f"# Lemurs\n\n{sentences}\n\n# Other\n\nShort."
    add_text(admin_client, "handbook", "Lemurs", text, mimeType="text/markdown")
    chunks = list(Chunk.objects.order_by("ordinal"))
    assert len(chunks) >= 4
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert len(chunk.text) <= 1000 + 200
    lemur_chunks = [c for c in chunks if c.heading == "Lemurs"]
    assert lemur_chunks[0].text.startswith("# Lemurs")
    for previous, following in itertools.pairwise(lemur_chunks):
        assert following.start < previous.end  # overlap
        assert following.text.startswith("Sentence number")  # cut at a sentence boundary
    assert chunks[-1].heading == "Other" and chunks[-1].text == "# Other\n\nShort."


@pytest.mark.django_db(transaction=True)  # a worker commits as it goes
def test_large_documents_are_indexed_by_the_background_task(admin_client, base, settings):
    settings.CHAT_KB_INLINE_INDEX_BYTES = 10
    pending = add_text(admin_client, "handbook", "Big", "The aardvark chapter, long enough.").json()["document"]
    assert pending["status"] == "pending" and pending["chunkCount"] == 0
    assert query(admin_client, "handbook", "aardvark") == []

    call_command("run_worker", "--burst", stdout=StringIO())  # a worker takes the task enqueued on commit

    assert documents(admin_client, "handbook")[0]["status"] == "indexed"
    assert query(admin_client, "handbook", "aardvark")[0]["title"] == "Big"
    assert Document.objects.get().content is None  # the upload is not kept once indexed


@pytest.mark.django_db(transaction=True)
def test_the_task_is_idempotent_and_skips_deleted_documents(admin_client, base, settings):
    from knowledge.services import index_document

    settings.CHAT_KB_INLINE_INDEX_BYTES = 10
    add_text(admin_client, "handbook", "Big", "The aardvark chapter, long enough.")
    call_command("run_worker", "--burst", stdout=StringIO())
    document = Document.objects.get()
    assert index_document.call(document.pk) == "indexed", "a second run of the task changes nothing"
    assert Chunk.objects.count() == 1
    pending = add_text(admin_client, "handbook", "Second", "Bongo text that is long.").json()["document"]
    admin_client.delete(f"/api/chat-admin/knowledge-base/handbook/documents/{pending['documentId']}")
    call_command("run_worker", "--burst", stdout=StringIO())
    assert [d["title"] for d in documents(admin_client, "handbook")] == ["Big"]
    assert query(admin_client, "handbook", "bongo") == []


def test_a_newer_upload_indexed_first_wins(admin_client, base, settings, django_capture_on_commit_callbacks):
    settings.CHAT_KB_INLINE_INDEX_BYTES = 30
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        add_text(admin_client, "handbook", "Guide", "The older gerenuk guide, long enough to wait.")
    add_text(admin_client, "handbook", "Guide", "Newer dikdik guide.")  # small: indexed at once
    callbacks[0]()  # the older one finishes last: it must not come back
    assert [d["size"] for d in documents(admin_client, "handbook")] == [len("Newer dikdik guide.")]
    assert query(admin_client, "handbook", "gerenuk") == []
