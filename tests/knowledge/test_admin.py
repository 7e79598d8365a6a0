"""Django admin of knowledge bases: the API's rules, documents with their status, upload from the
admin, the "test a query" box, and deletes that go through the same services."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import Chunk, Document, KnowledgeBase
from tests.knowledge.conftest import add_text, create_base, query
from tests.knowledge.pdf import make_pdf

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/knowledge/knowledgebase/add/"
CHANGE_URL = "/admin/knowledge/knowledgebase/handbook/change/"


def form(**fields: str) -> dict[str, str]:
    data = {
        "knowledge_base_id": "handbook",
        "name": "Handbook",
        "description": "Staff policies.",
        "source": "local",
        "external_id": "",
        "strategy": "tool",
        "top_k": "5",
        "mode": "lexical",
        "access_rules": "null",
        "documents-TOTAL_FORMS": "0",
        "documents-INITIAL_FORMS": "0",
        "documents-MIN_NUM_FORMS": "0",
        "documents-MAX_NUM_FORMS": "0",
    }
    return {**data, **fields}


def test_adding_a_knowledge_base_in_the_admin_stamps_the_user(staff):
    response = staff.post(ADD_URL, form())
    assert response.status_code == 302, response.content.decode()[:2000]
    base = KnowledgeBase.objects.get(pk="handbook")
    assert (base.name, base.created_by, base.mode) == ("Handbook", "staff", "lexical")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"knowledge_base_id": "bad id"}, "must be 1 to 57 letters"),
        ({"source": "bedrock"}, "is required when source is bedrock"),
        ({"mode": "semantic"}, "semantic search needs an embedding model"),
        ({"access_rules": '[{"effect": "perhaps"}]'}, "must be allow or deny"),
    ],
)
def test_the_admin_refuses_what_the_api_refuses(staff, fields, message):
    response = staff.post(ADD_URL, form(**fields))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not KnowledgeBase.objects.exists()


def test_upload_from_the_admin_lists_the_document_with_its_status(staff, admin_client):
    create_base(admin_client, "handbook")
    pdf = make_pdf(["The heron policy covers bird watching on site."])
    response = staff.post(
        "/admin/knowledge/knowledgebase/handbook/upload/",
        {
            "file": SimpleUploadedFile("birds.pdf", pdf, content_type="application/pdf"),
            "title": "Birds",
            "source_url": "https://intra/birds",
        },
    )
    assert response.status_code == 302
    page = staff.get(CHANGE_URL).content.decode()
    assert "Birds: indexed, 1 chunks." in page
    assert "Birds" in page and "indexed" in page
    assert query(admin_client, "handbook", "heron")[0]["sourceUrl"] == "https://intra/birds"

    staff.post(
        "/admin/knowledge/knowledgebase/handbook/upload/",
        {"file": SimpleUploadedFile("x.exe", b"MZ", content_type="application/x-msdownload")},
    )
    assert "Upload refused: file: type application/x-msdownload is not accepted" in staff.get(CHANGE_URL).content.decode()
    staff.post(
        "/admin/knowledge/knowledgebase/handbook/upload/",
        {"file": SimpleUploadedFile("bad.pdf", b"%PDF-no", content_type="application/pdf")},
    )
    page = staff.get(CHANGE_URL).content.decode()
    assert "Bad.pdf: failed: not a readable PDF" in page  # the admin capitalises messages
    assert Document.objects.filter(status="failed").count() == 1


def test_the_query_box_shows_what_the_model_would_get(staff, admin_client):
    create_base(admin_client, "handbook")
    add_text(admin_client, "handbook", "Parking", "# Garage\n\nThe capybara spot is reserved.", mimeType="text/markdown")
    page = staff.get(CHANGE_URL, {"q": "capybara", "top_k": "3"}).content.decode()
    (result,) = query(admin_client, "handbook", "capybara", topK=3)
    assert 'id="knowledge-results"' in page
    assert "1 result." in page
    assert result["chunkId"] in page and "The capybara spot is reserved." in page and "[1]" in page


def test_deleting_a_document_in_the_admin_removes_its_chunks(staff, admin_client):
    create_base(admin_client, "handbook")
    document = add_text(admin_client, "handbook", "Parking", "The capybara spot is reserved.").json()["document"]
    pk = Document.objects.get(document_id=document["documentId"]).pk
    response = staff.post(f"/admin/knowledge/document/{pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Chunk.objects.exists()
    assert query(admin_client, "handbook", "capybara") == []


def test_deleting_a_knowledge_base_an_agent_lists_is_refused_in_the_admin(staff, admin_client):
    create_base(admin_client, "handbook")
    agent = {"agentId": "helper", "basePrompt": "Help.", "toolIds": [], "knowledgeBases": [{"id": "handbook"}]}
    admin_client.post("/api/chat-admin/agent", {"agent": agent}, format="json")
    response = staff.get("/admin/knowledge/knowledgebase/handbook/delete/", follow=True)
    assert "Cannot delete: knowledge base handbook is used by agents helper" in response.content.decode()
    assert KnowledgeBase.objects.filter(pk="handbook").exists()
