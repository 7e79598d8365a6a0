"""Fixtures of the knowledge base tests: a knowledge base made through the API, uploads, queries,
and the scripted embeddings endpoint (tests/peers/openai_server.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from knowledge.search import forget_vectors
from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)

EMBEDDING_MODEL = "openai:test-embedding"


def create_base(client: Any, knowledge_base_id: str = "handbook", **fields: Any) -> dict[str, Any]:
    base = {"knowledgeBaseId": knowledge_base_id, "name": "Handbook", "description": "The staff handbook.", **fields}
    response = client.post("/api/chat-admin/knowledge-base", {"knowledgeBase": base, "userId": "ops"}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["knowledgeBase"]


def add_text(client: Any, base_id: str, title: str, text: str, **fields: Any) -> Any:
    return client.post(
        f"/api/chat-admin/knowledge-base/{base_id}/documents", {"document": {"title": title, "text": text, **fields}}, format="json"
    )


def upload(client: Any, base_id: str, name: str, data: bytes, content_type: str, **fields: Any) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return client.post(
        f"/api/chat-admin/knowledge-base/{base_id}/documents",
        {"file": SimpleUploadedFile(name, data, content_type=content_type), **fields},
        format="multipart",
    )


def query(client: Any, base_id: str, text: str, **fields: Any) -> list[dict[str, Any]]:
    response = client.post(f"/api/chat-admin/knowledge-base/{base_id}/query", {"query": text, **fields}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def documents(client: Any, base_id: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/chat-admin/knowledge-base/{base_id}/documents")
    assert response.status_code == 200, response.json()
    return response.json()["documents"]


@pytest.fixture(autouse=True)
def _no_cached_vectors() -> Iterator[None]:
    forget_vectors()
    yield
    forget_vectors()


@pytest.fixture
def embedding_model(openai_server: Any, settings: Any) -> Any:  # noqa: F811 (the fixture imported above)
    """CHAT_EMBEDDING_MODEL pointed at the scripted server's /v1/embeddings; yields the server."""
    settings.CHAT_EMBEDDING_MODEL = EMBEDDING_MODEL
    return openai_server
