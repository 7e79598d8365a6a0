"""Admin API of knowledge bases (docs/api.md, "Knowledge bases"): create, update, get, delete, search, and every
rule of a write; each bad input is a 400 naming the field, and nothing is written."""

from __future__ import annotations

import pytest

from knowledge.models import KnowledgeBase
from tests.conftest import assert_error
from tests.knowledge.conftest import add_text, create_base

pytestmark = pytest.mark.django_db


def post_base(client, base, **body):
    return client.post("/api/chat-admin/knowledge-base", {"knowledgeBase": base, **body}, format="json")


def test_create_fills_the_defaults_and_stamps_the_user(admin_client):
    base = create_base(admin_client, "handbook")
    assert base["knowledgeBaseId"] == "handbook"
    assert base["name"] == "Handbook" and base["description"] == "The staff handbook."
    assert base["source"] == "local" and base["externalId"] is None
    assert base["retrieval"] == {"strategy": "tool", "topK": 5, "mode": "lexical"}
    assert base["accessRules"] is None
    assert base["documentCount"] == 0 and base["chunkCount"] == 0
    assert base["createdBy"] == base["lastUpdatedBy"] == "ops"
    assert base["createDate"] and base["lastUpdate"]


def test_update_changes_only_the_given_fields_and_the_counts_follow_the_documents(admin_client):
    create_base(admin_client, "handbook", retrieval={"strategy": "always", "topK": 3}, accessRules=[{"effect": "allow"}])
    add_text(admin_client, "handbook", "Leave", "Annual leave is 25 days.\n\nCarry over 5 days at most.")
    response = post_base(admin_client, {"knowledgeBaseId": "handbook", "description": "Policies."}, userId="carol")
    base = response.json()["knowledgeBase"]
    assert response.status_code == 200
    assert base["description"] == "Policies." and base["name"] == "Handbook"
    assert base["retrieval"] == {"strategy": "always", "topK": 3, "mode": "lexical"}
    assert base["accessRules"] == [{"effect": "allow"}]
    assert base["createdBy"] == "ops" and base["lastUpdatedBy"] == "carol"
    assert base["documentCount"] == 1 and base["chunkCount"] == 1


def test_a_read_definition_can_be_posted_back_unchanged(admin_client):
    base = create_base(admin_client, "handbook")
    response = post_base(admin_client, base)
    assert response.status_code == 200, response.json()
    assert response.json()["knowledgeBase"]["lastUpdate"] == base["lastUpdate"]


def test_get_delete_and_search(admin_client):
    create_base(admin_client, "handbook")
    create_base(admin_client, "faq", name="FAQ")
    assert admin_client.get("/api/chat-admin/knowledge-base/faq").json()["knowledgeBase"]["name"] == "FAQ"
    found = admin_client.post("/api/chat-admin/knowledge-bases/search", {"userId": "ops"}, format="json").json()["knowledgeBases"]
    assert [base["knowledgeBaseId"] for base in found] == ["faq", "handbook"]
    some = admin_client.post("/api/chat-admin/knowledge-bases/search", {"knowledgeBaseIds": ["handbook", "nope"]}, format="json")
    assert [base["knowledgeBaseId"] for base in some.json()["knowledgeBases"]] == ["handbook"]

    assert admin_client.delete("/api/chat-admin/knowledge-base/faq").json() == {"success": True}
    assert_error(admin_client.get("/api/chat-admin/knowledge-base/faq"), 404, "NOT_FOUND", mentions="faq")
    assert_error(admin_client.delete("/api/chat-admin/knowledge-base/faq"), 404, "NOT_FOUND")


def test_deleting_a_knowledge_base_removes_its_documents_and_chunks(admin_client):
    create_base(admin_client, "handbook")
    add_text(admin_client, "handbook", "Leave", "Annual leave is 25 days.")
    admin_client.delete("/api/chat-admin/knowledge-base/handbook")
    create_base(admin_client, "handbook")
    assert admin_client.get("/api/chat-admin/knowledge-base/handbook/documents").json()["documents"] == []
    results = admin_client.post("/api/chat-admin/knowledge-base/handbook/query", {"query": "annual leave"}, format="json").json()
    assert results == {"success": True, "results": []}


def test_bedrock_needs_its_external_id_and_local_refuses_one(admin_client):
    assert_error(post_base(admin_client, {"knowledgeBaseId": "kb", "name": "n", "description": "d", "source": "bedrock"}), 400,
                 "INVALID_REQUEST", mentions="knowledgeBase.externalId: is required when source is bedrock")  # fmt: skip
    assert_error(post_base(admin_client, {"knowledgeBaseId": "kb", "name": "n", "description": "d", "externalId": "X"}), 400,
                 mentions="knowledgeBase.externalId: is only for source bedrock")  # fmt: skip
    created = post_base(
        admin_client, {"knowledgeBaseId": "kb", "name": "n", "description": "d", "source": "bedrock", "externalId": "KB12345678"}
    )
    assert created.json()["knowledgeBase"]["externalId"] == "KB12345678"
    assert_error(add_text(admin_client, "kb", "t", "text"), 400, mentions="is searched in bedrock")


def test_source_cannot_change_while_documents_are_held(admin_client):
    create_base(admin_client, "handbook")
    add_text(admin_client, "handbook", "Leave", "Annual leave is 25 days.")
    response = post_base(admin_client, {"knowledgeBaseId": "handbook", "source": "bedrock", "externalId": "KB1"})
    assert_error(response, 400, mentions="knowledgeBase.source: cannot change from local")
    assert KnowledgeBase.objects.get(pk="handbook").source == "local"


@pytest.mark.parametrize(
    ("base", "mentions"),
    [
        ({"name": "n", "description": "d"}, "knowledgeBase.knowledgeBaseId: is required"),
        ({"knowledgeBaseId": 7, "name": "n", "description": "d"}, "knowledgeBase.knowledgeBaseId: must be a string"),
        ({"knowledgeBaseId": "has space", "name": "n", "description": "d"}, "knowledgeBase.knowledgeBaseId: must be 1 to 57 letters"),
        ({"knowledgeBaseId": "x" * 58, "name": "n", "description": "d"}, "knowledgeBase.knowledgeBaseId: must be at most 57"),
        ({"knowledgeBaseId": "kb", "description": "d"}, "knowledgeBase.name: is required"),
        ({"knowledgeBaseId": "kb", "name": "n"}, "knowledgeBase.description: is required"),
        ({"knowledgeBaseId": "kb", "name": "n", "description": "d" * 1001}, "knowledgeBase.description: must be at most 1000"),
        ({"knowledgeBaseId": "kb", "name": "n", "description": "d", "source": "s3"}, "knowledgeBase.source: must be local or bedrock"),
        ({"knowledgeBaseId": "kb", "name": "n", "description": "d", "retrieval": []}, "knowledgeBase.retrieval: must be an object"),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "retrieval": {"strategy": "sometimes"}},
            "knowledgeBase.retrieval.strategy: must be tool or always",
        ),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "retrieval": {"topK": 21}},
            "knowledgeBase.retrieval.topK: must be a whole number from 1 to 20",
        ),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "retrieval": {"topK": 0}},
            "knowledgeBase.retrieval.topK: must be a whole number from 1 to 20",
        ),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "retrieval": {"mode": "fuzzy"}},
            "knowledgeBase.retrieval.mode: must be lexical or semantic or hybrid",
        ),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "retrieval": {"mode": "semantic"}},
            "knowledgeBase.retrieval.mode: semantic search needs an embedding model",
        ),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "retrieval": {"depth": 2}},
            "knowledgeBase.retrieval.depth: is not a known field",
        ),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "accessRules": [{"effect": "maybe"}]},
            "knowledgeBase.accessRules[0].effect: must be allow or deny",
        ),
        (
            {"knowledgeBaseId": "kb", "name": "n", "description": "d", "accessRules": [{"effect": "allow", "condition": "user.("}]},
            "knowledgeBase.accessRules[0].condition: not a valid CEL expression",
        ),
        ({"knowledgeBaseId": "kb", "name": "n", "description": "d", "color": "red"}, "knowledgeBase.color: is not a field"),
    ],
)
def test_bad_writes_are_400_naming_the_field_and_write_nothing(admin_client, base, mentions):
    assert_error(post_base(admin_client, base), 400, "INVALID_REQUEST", mentions=mentions)
    assert not KnowledgeBase.objects.exists()


def test_a_bad_update_changes_nothing(admin_client):
    create_base(admin_client, "handbook")
    assert_error(post_base(admin_client, {"knowledgeBaseId": "handbook", "name": "New", "retrieval": {"topK": 99}}), 400)
    assert admin_client.get("/api/chat-admin/knowledge-base/handbook").json()["knowledgeBase"]["name"] == "Handbook"


def test_the_body_must_hold_a_knowledge_base_object(admin_client):
    assert_error(admin_client.post("/api/chat-admin/knowledge-base", {"userId": "ops"}, format="json"), 400, mentions="knowledgeBase")
    assert_error(post_base(admin_client, "handbook"), 400, mentions="knowledgeBase: must be an object")


def test_with_an_embedding_model_the_default_mode_is_hybrid(admin_client, settings):
    settings.CHAT_EMBEDDING_MODEL = "openai:text-embedding-3-small"
    assert create_base(admin_client, "handbook")["retrieval"]["mode"] == "hybrid"
    assert create_base(admin_client, "exact", retrieval={"mode": "semantic"})["retrieval"]["mode"] == "semantic"


def test_the_admin_api_needs_an_admin(user_client, anon_client, admin_client):
    create_base(admin_client, "handbook")
    paths = [
        ("post", "/api/chat-admin/knowledge-base"),
        ("get", "/api/chat-admin/knowledge-base/handbook"),
        ("delete", "/api/chat-admin/knowledge-base/handbook"),
        ("post", "/api/chat-admin/knowledge-bases/search"),
        ("get", "/api/chat-admin/knowledge-base/handbook/documents"),
        ("post", "/api/chat-admin/knowledge-base/handbook/documents"),
        ("delete", "/api/chat-admin/knowledge-base/handbook/documents/x"),
        ("post", "/api/chat-admin/knowledge-base/handbook/query"),
    ]
    for method, path in paths:
        assert_error(getattr(user_client, method)(path, {}, format="json"), 403, "INSUFFICIENT_PERMISSIONS")
        assert_error(getattr(anon_client, method)(path, {}, format="json"), 401)
    assert KnowledgeBase.objects.filter(pk="handbook").exists()
