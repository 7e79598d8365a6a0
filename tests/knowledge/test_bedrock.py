"""`source: bedrock` knowledge bases and `bedrock:` embedding models (docs/api.md, "Knowledge bases"), through boto3
against a scripted Bedrock endpoint on loopback (tests/peers/bedrock_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatplatform import bedrock
from tests.conftest import assert_error
from tests.knowledge.conftest import add_text, create_base, query
from tests.peers.bedrock_server import BedrockServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def bedrock_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[BedrockServer]:
    with BedrockServer() as server:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME", server.url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", server.url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
        bedrock.forget_clients()
        yield server
        bedrock.forget_clients()


def test_query_asks_the_providers_retrieve_api_and_maps_its_results(admin_client, bedrock_server):
    create_base(admin_client, "policies", source="bedrock", externalId="KBAB12CD34", retrieval={"topK": 3})
    bedrock_server.results = [
        {
            "content": {"text": "Refunds are paid within 14 days."},
            "location": {"type": "S3", "s3Location": {"uri": "s3://docs/policies/refunds.pdf"}},
            "score": 0.83,
            "metadata": {"x-amz-bedrock-kb-chunk-id": "chunk-7"},
        },
        {
            "content": {"text": "See the web page."},
            "location": {"type": "WEB", "webLocation": {"url": "https://example.com/faq"}},
            "score": 0.5,
        },
    ]
    results = query(admin_client, "policies", "how fast are refunds?")
    assert results == [
        {
            "documentId": "s3://docs/policies/refunds.pdf",
            "title": "refunds.pdf",
            "sourceUrl": "s3://docs/policies/refunds.pdf",
            "chunkId": "chunk-7",
            "text": "Refunds are paid within 14 days.",
            "score": 0.83,
        },
        {
            "documentId": "https://example.com/faq",
            "title": "faq",
            "sourceUrl": "https://example.com/faq",
            "chunkId": "https://example.com/faq#1",
            "text": "See the web page.",
            "score": 0.5,
        },
    ]
    (call,) = bedrock_server.requests
    assert call["path"] == "/knowledgebases/KBAB12CD34/retrieve"
    assert call["body"] == {
        "retrievalQuery": {"text": "how fast are refunds?"},
        "retrievalConfiguration": {"vectorSearchConfiguration": {"numberOfResults": 3}},
    }
    assert "eu-west-1/bedrock/aws4_request" in call["headers"]["authorization"]  # signed by boto3 for the region


def test_a_provider_failure_is_a_502_naming_the_knowledge_base(admin_client, bedrock_server):
    create_base(admin_client, "policies", source="bedrock", externalId="KBAB12CD34")
    bedrock_server.fail_with = 400
    response = admin_client.post("/api/chat-admin/knowledge-base/policies/query", {"query": "x"}, format="json")
    assert_error(response, 502, "INTERNAL_ERROR", mentions="Bedrock knowledge base KBAB12CD34")


@pytest.mark.parametrize(("model", "batched"), [("amazon.titan-embed-text-v2:0", False), ("cohere.embed-english-v3", True)])
def test_bedrock_embedding_models_index_and_search(admin_client, bedrock_server, settings, model, batched):
    settings.CHAT_EMBEDDING_MODEL = f"bedrock:{model}"
    create_base(admin_client, "notes", retrieval={"mode": "semantic"})
    add_text(admin_client, "notes", "Pets", "cats and dogs")
    add_text(admin_client, "notes", "Tools", "hammers and saws")
    assert query(admin_client, "notes", "dogs cats")[0]["title"] == "Pets"
    invocations = [call for call in bedrock_server.requests if call["path"] == f"/model/{model}/invoke"]
    if batched:
        assert [call["body"]["input_type"] for call in invocations] == ["search_document", "search_document", "search_query"]
        assert invocations[-1]["body"]["texts"] == ["dogs cats"]
    else:
        assert [call["body"] for call in invocations] == [
            {"inputText": "cats and dogs"},
            {"inputText": "hammers and saws"},
            {"inputText": "dogs cats"},
        ]
