"""Knowledge bases in turns (docs/api.md, "Knowledge bases"): the model searches them through a function, or the
user's message is searched before the model is called; the results reach the model numbered, and
the answer carries its `citations` (JSON, `done`, the stored message) and a trace."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentDefinition
from tests.asgi_client import AsgiClient
from tests.conftest import bearer_token
from tests.converse.helpers import converse, converse_sse
from tests.peers import Reply, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

PHRASE = "Saturday deliveries leave from dock seven"


async def _admin(path: str, payload: dict[str, Any]) -> dict[str, Any]:
    response = await AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('ops', admin=True)}").post(path, payload)
    assert response.status_code == 200, response.json()
    return response.json()


async def _knowledge_base(knowledge_base_id: str = "handbook", **fields: Any) -> str:
    base = {
        "knowledgeBaseId": knowledge_base_id,
        "name": "Handbook",
        "description": "The warehouse handbook: shifts, docks, deliveries.",
        **fields,
    }
    await _admin("/api/chat-admin/knowledge-base", {"knowledgeBase": base})
    document = {"title": "Deliveries", "text": f"# Deliveries\n\n{PHRASE}, from 6 am.\n\n# Parking\n\nStaff park behind building B."}
    added = await _admin(f"/api/chat-admin/knowledge-base/{knowledge_base_id}/documents", {"document": document})
    assert added["document"]["status"] == "indexed"
    return added["document"]["documentId"]


async def _agent_uses(*knowledge_base_ids: str) -> None:
    await AgentDefinition.objects.filter(pk="helper").aupdate(knowledge_bases=[{"id": base} for base in knowledge_base_ids])


async def test_the_model_searches_a_knowledge_base_through_its_function_and_the_answer_cites_it(
    app, async_client_for, openai_server, settings
):
    settings.CHAT_SITE_FEATURES = {"traces": {"enabled": True}}
    document_id = await _knowledge_base()
    await _agent_uses("handbook")
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("search_handbook", {"query": "Saturday deliveries dock"}, id="call_kb")]),
            Reply(text="Saturday deliveries leave from dock seven [1]."),
        ]
    )

    _, events = await converse_sse(async_client_for("alice"), message="Where do Saturday deliveries leave from?")

    (offered,) = openai_server.offered_tools(0)
    assert offered["name"] == "search_handbook"
    assert offered["description"] == "The warehouse handbook: shifts, docks, deliveries."
    assert offered["parameters"]["required"] == ["query"]
    ((call_id, result),) = openai_server.tool_results(1)
    assert call_id == "call_kb" and result.startswith("[1] Deliveries\n") and PHRASE in result
    done = dict(events)["done"]
    (citation,) = done["citations"][:1]
    assert citation == {
        "n": 1,
        "knowledgeBaseId": "handbook",
        "documentId": document_id,
        "title": "Deliveries",
        "sourceUrl": citation["sourceUrl"],
        "chunkId": citation["chunkId"],
        "text": citation["text"],
    }
    assert PHRASE in citation["text"]
    lookup = next(data for name, data in events if name == "trace" and "knowledgeBaseLookupOutput" in data)["knowledgeBaseLookupOutput"]
    assert lookup["knowledgeBaseId"] == "handbook" and lookup["query"] == "Saturday deliveries dock"
    assert lookup["results"][0]["documentId"] == document_id

    messages = (await async_client_for("alice").request("GET", f"/api/chat/sessions/{done['sessionId']}/messages")).json()["messages"]
    assert messages[-1]["citations"] == done["citations"]

    openai_server.script([Reply(tool_calls=[ToolCall("search_handbook", {"query": "parking"})]), Reply(text="Behind building B [1].")])
    answer = (await converse(async_client_for("alice"), message="Where do staff park?")).json()
    assert answer["citations"][0]["title"] == "Deliveries" and "building B" in answer["citations"][0]["text"]


async def test_strategy_always_puts_the_results_into_the_first_model_request(app, async_client_for, openai_server):
    await _knowledge_base(retrieval={"strategy": "always", "topK": 2})
    await _agent_uses("handbook")
    openai_server.script([Reply(text="From dock seven [1].")])

    answer = (await converse(async_client_for("alice"), message="Saturday deliveries?")).json()

    (request,) = openai_server.requests
    assert "tools" not in request, "an always knowledge base is no function"
    user_turn = request["messages"][-1]["content"]
    assert user_turn.startswith("Saturday deliveries?") and f"[1] Deliveries\n# Deliveries\n\n{PHRASE}" in user_turn
    assert answer["citations"][0]["n"] == 1 and PHRASE in answer["citations"][0]["text"]


async def test_a_knowledge_base_denied_to_the_user_is_neither_offered_nor_searched(app, async_client_for, openai_server):
    await _knowledge_base(accessRules=[{"condition": "user.userType == 'internal-user'", "effect": "allow"}, {"effect": "deny"}])
    await _knowledge_base("always-closed", retrieval={"strategy": "always"}, accessRules=[{"effect": "deny"}])
    await _agent_uses("handbook", "always-closed")
    openai_server.script([Reply(text="I cannot look that up.")])

    answer = (await converse(async_client_for("alice"), message="Saturday deliveries?")).json()

    (request,) = openai_server.requests
    assert "tools" not in request
    assert request["messages"][-1]["content"] == "Saturday deliveries?"
    assert "citations" not in answer


async def test_a_failed_lookup_is_the_functions_error_and_the_turn_still_answers(app, async_client_for, openai_server, settings):
    await _knowledge_base("semantic-one")
    await _agent_uses("semantic-one")
    # The base ranks by vectors, and the embedding model is gone: its search fails.
    await sync_to_async(_make_semantic)("semantic-one")
    settings.CHAT_EMBEDDING_MODEL = "openai:no-such-embedding"
    openai_server.embed_with(_broken)  # the embeddings endpoint answers 500
    openai_server.script(
        [Reply(tool_calls=[ToolCall("search_semantic_one", {"query": "docks"})]), Reply(text="The handbook is unavailable.")]
    )

    answer = await converse(async_client_for("alice"), message="Which dock?")

    assert answer.status_code == 200 and answer.json()["response"] == "The handbook is unavailable."
    ((_, error),) = openai_server.tool_results(1)
    assert "semantic-one" in error or "embed" in error.lower()


async def test_a_chat_user_reads_that_a_lookup_failed_and_operators_read_why(app, async_client_for, openai_server, settings):
    settings.CHAT_SITE_FEATURES = {"traces": {"enabled": True}}
    await _knowledge_base("semantic-one")
    await _agent_uses("semantic-one")
    await sync_to_async(_make_semantic)("semantic-one")
    settings.CHAT_EMBEDDING_MODEL = "openai:no-such-embedding"
    openai_server.embed_with(_broken)
    openai_server.script([Reply(tool_calls=[ToolCall("search_semantic_one", {"query": "docks"})]), Reply(text="Unavailable.")])

    _, events = await converse_sse(async_client_for("alice"), message="Which dock?")
    session_id = dict(events)["done"]["sessionId"]
    stored = await async_client_for("alice").request("GET", f"/api/chat/sessions/{session_id}/messages")
    kept = await async_client_for("root", admin=True).request("GET", f"/api/chat-admin/sessions/{session_id}/messages")

    def lookups(traces: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [trace["knowledgeBaseLookupOutput"] for trace in traces if "knowledgeBaseLookupOutput" in trace]

    streamed = lookups([data for name, data in events if name == "trace"])
    theirs = lookups([trace for message in stored.json()["messages"] for trace in message.get("traces", [])])
    operators = lookups([trace for message in kept.json()["messages"] for trace in message.get("traces", [])])
    assert [lookup["error"] for lookup in streamed + theirs] == ["failed: the reason is kept for the operators"] * 2
    assert [lookup["error"] != "failed: the reason is kept for the operators" for lookup in operators] == [True]


def _broken(text: str) -> list[float]:
    raise RuntimeError("embeddings down")


def _make_semantic(knowledge_base_id: str) -> None:
    from knowledge.models import KnowledgeBase

    KnowledgeBase.objects.filter(pk=knowledge_base_id).update(mode="semantic")


async def test_the_offline_model_answers_a_question_about_the_platform_from_its_documentation(app, async_client_for):
    await _knowledge_base("platform-docs", name="Platform documentation", description="The platform's documentation.")
    await AgentDefinition.objects.filter(pk="helper").aupdate(foundation_model="offline", knowledge_bases=[{"id": "platform-docs"}])

    answer = (await converse(async_client_for("alice"), message="Which dock do the platform's Saturday deliveries use?")).json()

    assert answer["citations"][0]["n"] == 1
    assert "[1]" in answer["response"] and "dock seven" in answer["response"]
    assert json.dumps(answer["citations"])
