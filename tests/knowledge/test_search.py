"""The query endpoint (docs/api.md, "Knowledge bases"): lexical search on both databases, semantic and hybrid search
against a scripted embeddings endpoint, with rankings computed by hand."""

from __future__ import annotations

import math
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from knowledge.models import Chunk
from tests.conftest import assert_error
from tests.knowledge.conftest import EMBEDDING_MODEL, add_text, create_base, query

pytestmark = pytest.mark.django_db

FILLER = [
    "The quarterly report covers revenue, hiring and the office move.",
    "Our migration plan moves the billing database to the new cluster in spring.",
    "Elephant seals were the theme of the summer party; purple balloons everywhere.",
    "The purple team owns the data migration and reports to the platform group.",
    "Hiring continues in the support group; the office move happens in autumn.",
]


def test_a_documents_unique_phrase_is_found_first(admin_client):
    create_base(admin_client, "handbook")
    for index, text in enumerate(FILLER):
        add_text(admin_client, "handbook", f"Note {index}", text)
    target = add_text(
        admin_client, "handbook", "Field trip", "Next month's field trip studies the purple elephant migration across the valley."
    ).json()["document"]
    results = query(admin_client, "handbook", "purple elephant migration")
    assert results[0]["documentId"] == target["documentId"]
    assert results[0]["title"] == "Field trip" and "purple elephant migration" in results[0]["text"]
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert set(results[0]) == {"documentId", "title", "sourceUrl", "chunkId", "text", "score"}


def test_top_k_limits_the_results_and_defaults_to_the_bases(admin_client):
    create_base(admin_client, "handbook", retrieval={"topK": 2})
    for index in range(6):
        add_text(admin_client, "handbook", f"Doc {index}", f"Shared words about the warehouse, number {index}.")
    assert len(query(admin_client, "handbook", "warehouse")) == 2
    assert len(query(admin_client, "handbook", "warehouse", topK=4)) == 4


def test_words_match_in_any_form_and_query_syntax_is_only_text(admin_client):
    create_base(admin_client, "handbook")
    add_text(admin_client, "handbook", "Runs", "She was running the deployments herself.")
    assert query(admin_client, "handbook", "deployment runs")[0]["title"] == "Runs"  # stemmed on both databases
    for hostile in ('"unbalanced', "AND OR NOT", "deploy* NEAR(x)", "col:umn", "'; DROP TABLE knowledge_chunk; --", "!!!"):
        response = admin_client.post("/api/chat-admin/knowledge-base/handbook/query", {"query": hostile}, format="json")
        assert response.status_code == 200, (hostile, response.json())
    assert Chunk.objects.count() == 1


def test_headings_are_searchable_and_weigh_more(admin_client):
    create_base(admin_client, "handbook")
    add_text(admin_client, "handbook", "A", "# Parking\n\nSpaces are in the basement.", mimeType="text/markdown")
    add_text(admin_client, "handbook", "B", "Bikes go next to the parking gate, near parking.", mimeType="text/markdown")
    assert query(admin_client, "handbook", "parking")[0]["title"] == "A"


@pytest.mark.parametrize(
    ("body", "mentions"),
    [
        ({}, "query: is required"),
        ({"query": 3}, "query: must be a string"),
        ({"query": ""}, "query: must not be blank"),
        ({"query": "x" * 2001}, "query: must be at most 2000"),
        ({"query": "x", "topK": 0}, "topK: must be a whole number from 1 to 20"),
        ({"query": "x", "topK": 21}, "topK: must be a whole number from 1 to 20"),
        ({"query": "x", "topK": "5"}, "topK: must be a whole number from 1 to 20"),
    ],
)
def test_bad_queries_are_400_naming_the_field(admin_client, body, mentions):
    create_base(admin_client, "handbook")
    response = admin_client.post("/api/chat-admin/knowledge-base/handbook/query", body, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions=mentions)


def test_querying_an_unknown_base_is_404(admin_client):
    response = admin_client.post("/api/chat-admin/knowledge-base/nope/query", {"query": "x"}, format="json")
    assert_error(response, 404, "NOT_FOUND", mentions="nope")


# --- semantic and hybrid, with vectors of a scripted embedding model ---------------------------

# Each word of the vocabulary counts on its dimension; "feline" means cat (a synonym the lexical
# index cannot know).
VOCABULARY = {"cat": 0, "feline": 0, "dog": 1, "fish": 2, "bird": 3}


def counted(text: str) -> list[float]:
    vector = [0.0] * 4
    for word in re.findall(r"\w+", text.lower()):
        if word in VOCABULARY:
            vector[VOCABULARY[word]] += 1.0
    return vector


CORPUS = {"A": "cat cat dog", "B": "cat fish fish", "C": "dog bird", "D": "cat", "E": "feline dog dog dog"}


@pytest.fixture
def animals(admin_client, embedding_model):
    embedding_model.embed_with(counted)
    create_base(admin_client, "animals", retrieval={"mode": "semantic"})
    create_base(admin_client, "animals-hybrid")  # the default mode with an embedding model: hybrid
    for title, text in CORPUS.items():
        for base in ("animals", "animals-hybrid"):
            assert add_text(admin_client, base, title, text).json()["document"]["status"] == "indexed"
    return embedding_model


def test_semantic_ranks_by_cosine_as_computed_by_hand(admin_client, animals):
    results = query(admin_client, "animals", "feline")  # the query's vector: (1, 0, 0, 0)
    # cosines: D 1/1, A 2/√5, B 1/√5, E 1/√10, C 0
    expected = [("D", 1.0), ("A", 2 / math.sqrt(5)), ("B", 1 / math.sqrt(5)), ("E", 1 / math.sqrt(10)), ("C", 0.0)]
    assert [(r["title"], round(r["score"], 6)) for r in results] == [(t, round(s, 6)) for t, s in expected]
    request = animals.embedding_requests[-1]
    assert request["model"] == EMBEDDING_MODEL.split(":", 1)[1] and request["input"] == ["feline"]


def test_hybrid_fuses_the_two_rankings_by_reciprocal_rank(admin_client, animals):
    assert admin_client.get("/api/chat-admin/knowledge-base/animals-hybrid").json()["knowledgeBase"]["retrieval"]["mode"] == "hybrid"
    results = query(admin_client, "animals-hybrid", "feline")
    # lexical: only E holds the word (rank 1); semantic: D, A, B, E, C (ranks 1-5). RRF, k = 60:
    expected = {"E": 1 / 61 + 1 / 64, "D": 1 / 61, "A": 1 / 62, "B": 1 / 63, "C": 1 / 65}
    assert [r["title"] for r in results] == ["E", "D", "A", "B", "C"]
    assert [round(r["score"], 9) for r in results] == [round(expected[r["title"]], 9) for r in results]


def test_documents_are_embedded_with_their_text_and_deleting_one_updates_the_vectors(admin_client, animals):
    inputs = [text for request in animals.embedding_requests for text in request["input"]]
    assert sorted(set(inputs)) == sorted(CORPUS.values())
    assert query(admin_client, "animals", "feline")[0]["title"] == "D"  # the base's vectors are now held in memory
    d = next(doc for doc in admin_client.get("/api/chat-admin/knowledge-base/animals/documents").json()["documents"] if doc["title"] == "D")
    admin_client.delete(f"/api/chat-admin/knowledge-base/animals/documents/{d['documentId']}")
    assert [r["title"] for r in query(admin_client, "animals", "feline")] == ["A", "B", "E", "C"]
    add_text(admin_client, "animals", "F", "cat cat cat")
    assert query(admin_client, "animals", "feline")[0]["title"] == "F"


def test_a_failing_embedding_model_fails_the_document_and_the_query_cleanly(admin_client, embedding_model):
    create_base(admin_client, "animals", retrieval={"mode": "semantic"})
    embedding_model.embed_with(lambda text: [])
    document = add_text(admin_client, "animals", "X", "cat").json()["document"]
    assert document["status"] == "failed" and document["error"].startswith("the embedding model failed:")
    assert not Chunk.objects.exists()
    response = admin_client.post("/api/chat-admin/knowledge-base/animals/query", {"query": "cat"}, format="json")
    assert_error(response, 502, "INTERNAL_ERROR", mentions="the search failed")


def test_a_lexical_base_needs_no_embedding_call(admin_client, embedding_model):
    create_base(admin_client, "words", retrieval={"mode": "lexical"})
    add_text(admin_client, "words", "X", "cat")
    requests_before = len(embedding_model.embedding_requests)
    assert query(admin_client, "words", "cat")[0]["title"] == "X"
    assert len(embedding_model.embedding_requests) == requests_before


def test_a_word_in_most_chunks_no_longer_selects_results_but_still_finds_alone(admin_client, monkeypatch):
    from knowledge import search

    monkeypatch.setattr(search, "_FREQUENT_MIN", 10)  # the deployment's floor, lowered to a test's size
    search.forget_word_counts()
    create_base(admin_client, "handbook")
    for index in range(20):
        add_text(admin_client, "handbook", f"Policy {index}", f"This policy covers topic number {index}.")
    add_text(admin_client, "handbook", "Zebra", "This policy covers the zebra crossing.")
    search.forget_word_counts()
    assert [r["title"] for r in query(admin_client, "handbook", "policy zebra")] == ["Zebra"]
    assert len(query(admin_client, "handbook", "policy")) == 5  # only frequent words: the rarest of them selects
    assert query(admin_client, "handbook", "this policy covers the zebra")[0]["title"] == "Zebra"


def test_reembed_gives_documents_uploaded_before_the_model_vectors_of_it(admin_client, settings, embedding_model):
    embedding_model.embed_with(counted)
    settings.CHAT_EMBEDDING_MODEL = None
    create_base(admin_client, "animals")
    for title, text in CORPUS.items():
        add_text(admin_client, "animals", title, text)
    settings.CHAT_EMBEDDING_MODEL = EMBEDDING_MODEL
    create_base(admin_client, "animals", retrieval={"mode": "semantic"})
    assert query(admin_client, "animals", "feline") == []  # no vector of this model yet

    dry = StringIO()
    call_command("knowledge_reembed", "--dry-run", stdout=dry)
    assert "5 documents would be embedded" in dry.getvalue() and query(admin_client, "animals", "feline") == []

    call_command("knowledge_reembed", stdout=StringIO())
    assert [r["title"] for r in query(admin_client, "animals", "feline")] == ["D", "A", "B", "E", "C"]
    out = StringIO()
    call_command("knowledge_reembed", stdout=out)  # nothing left to do
    assert "0 documents embedded" in out.getvalue()


def test_reembed_reports_a_failing_model_and_keeps_the_documents_as_they_were(admin_client, settings, embedding_model):
    settings.CHAT_EMBEDDING_MODEL = None
    create_base(admin_client, "animals")
    add_text(admin_client, "animals", "A", "cat")
    settings.CHAT_EMBEDDING_MODEL = EMBEDDING_MODEL
    create_base(admin_client, "animals", retrieval={"mode": "semantic"})
    embedding_model.embed_with(lambda text: [])
    with pytest.raises(CommandError, match=r"the embedding model failed for:\n.*animals: A"):
        call_command("knowledge_reembed", stdout=StringIO())
    embedding_model.embed_with(counted)  # the model is back: the document still has no vector of it
    assert query(admin_client, "animals", "cat") == []


def test_reembed_needs_a_model(settings):
    settings.CHAT_EMBEDDING_MODEL = None
    with pytest.raises(CommandError, match="CHAT_EMBEDDING_MODEL is not set"):
        call_command("knowledge_reembed")
