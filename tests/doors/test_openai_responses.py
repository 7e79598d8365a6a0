"""OpenAI's Responses door through the official `openai` SDK (docs/doors.md): a response is a
turn's answer, `previous_response_id` continues its session, and a response is retrieved and
replayed after a sequence number."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentDefinition
from chat.models import ChatMessage, ChatSession
from chat.turn import wait_for_running_turns
from tests.conftest import bearer_token
from tests.doors.conftest import authorized
from tests.factories import ToolDefinitionFactory
from tests.peers import Reply, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

STREAM_ORDER = [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.completed",
]


async def streamed(client: openai.AsyncOpenAI, **request: Any) -> list[Any]:
    stream = await client.responses.create(stream=True, **request)
    events = [event async for event in stream]
    await wait_for_running_turns()
    return events


async def test_a_response_answers_as_the_agent_in_a_session_of_the_chat_api(app, openai_for, openai_server, http):
    openai_server.script([Reply(text="Hello from the agent.", prompt_tokens=12, completion_tokens=5)])

    raw = await openai_for("alice").responses.with_raw_response.create(model="support", input="Hi there")
    response = raw.parse()
    await wait_for_running_turns()

    assert (response.object, response.status, response.model) == ("response", "completed", "support")
    assert response.output_text == "Hello from the agent."
    assert response.output[0].role == "assistant"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (12, 5, 17)
    answer = await ChatMessage.objects.aget(pk=response.id)
    assert str(answer.session_id) == raw.headers["X-Chat-Session-Id"]
    sessions = (await http.get("/api/chat/sessions", headers=authorized())).json()["sessions"]
    assert [s["sessionId"] for s in sessions] == [raw.headers["X-Chat-Session-Id"]]


async def test_a_streamed_response_sends_its_events_in_order_numbered(app, openai_for, openai_server):
    openai_server.script([Reply(text="One two three.", prompt_tokens=7, completion_tokens=3)])

    events = await streamed(openai_for("alice"), model="support", input="Count")

    assert [event.type for event in events] == STREAM_ORDER
    assert [event.sequence_number for event in events] == list(range(len(STREAM_ORDER)))
    assert "".join(event.delta for event in events if event.type == "response.output_text.delta") == "One two three."
    completed = events[-1].response
    answer = await ChatMessage.objects.aget(source="assistant")
    assert (completed.id, completed.status, completed.output_text) == (str(answer.pk), "completed", "One two three.")
    assert (completed.usage.input_tokens, completed.usage.output_tokens) == (7, 3)
    assert events[0].response.id == completed.id
    assert {event.item_id for event in events if hasattr(event, "item_id")} == {completed.output[0].id}


async def test_the_sdks_stream_helper_accumulates_the_final_response(app, openai_for, openai_server):
    openai_server.script([Reply(text="Assembled by the helper.")])

    async with openai_for("alice").responses.stream(model="support", input="Hi") as stream:
        final = await stream.get_final_response()
    await wait_for_running_turns()

    assert final.output_text == "Assembled by the helper."


async def test_previous_response_id_continues_its_session(app, openai_for, openai_server):
    openai_server.script([Reply(text="Blue, noted."), Reply(text="Your car is blue.")])
    client = openai_for("alice")

    first = await client.responses.with_raw_response.create(model="support", input="My car is blue.")
    await wait_for_running_turns()
    second = await client.responses.with_raw_response.create(
        model="support", input="What colour is it?", previous_response_id=first.parse().id
    )
    await wait_for_running_turns()

    assert second.headers["X-Chat-Session-Id"] == first.headers["X-Chat-Session-Id"]
    seen = [(m["role"], m["content"]) for m in openai_server.requests[1]["messages"] if m["role"] != "system"]
    assert seen == [("user", "My car is blue."), ("assistant", "Blue, noted."), ("user", "What colour is it?")]
    assert await ChatSession.objects.acount() == 1


async def test_an_unknown_or_another_users_previous_response_is_not_found(app, openai_for, openai_server):
    openai_server.script([Reply(text="Bob's.")])
    bobs = await openai_for("bob").responses.create(model="support", input="Hi")
    await wait_for_running_turns()

    for previous in (bobs.id, "00000000-0000-4000-8000-000000000001", "not-an-id"):
        with pytest.raises(openai.NotFoundError) as refused:
            await openai_for("alice").responses.create(model="support", input="Hi", previous_response_id=previous)
        assert refused.value.body["message"] == f"previous_response_id: response {previous} not found"
    assert await ChatMessage.objects.acount() == 2


async def test_message_items_before_the_last_user_item_become_a_new_sessions_history(app, openai_for, openai_server):
    openai_server.script([Reply(text="Seven.")])

    await openai_for("alice").responses.create(
        model="support",
        input=[
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": "Pick a number."},
            {"role": "assistant", "content": [{"type": "output_text", "text": "Three."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Another one?"}]},
        ],
    )
    await wait_for_running_turns()

    seen = [(m["role"], m["content"]) for m in openai_server.requests[0]["messages"] if m["role"] != "system"]
    assert seen == [("user", "Pick a number."), ("assistant", "Three."), ("user", "Another one?")]


async def test_items_other_than_messages_and_tools_are_refused(app, openai_for):
    client = openai_for("alice")
    with pytest.raises(openai.BadRequestError) as refused:
        await client.responses.create(model="support", input=[{"type": "function_call_output", "call_id": "c", "output": "{}"}])
    assert refused.value.body["message"].startswith("input[0]: only message items")
    with pytest.raises(openai.BadRequestError):
        await client.responses.create(model="support", input="Hi", tools=[{"type": "function", "name": "f", "parameters": {}}])
    assert not await ChatSession.objects.aexists()


async def test_a_stored_response_is_retrieved_by_its_owner_only(app, openai_for, openai_server):
    openai_server.script([Reply(text="Kept answer.")])
    created = await openai_for("alice").responses.create(model="support", input="Hi")
    await wait_for_running_turns()

    retrieved = await openai_for("alice").responses.retrieve(created.id)

    assert (retrieved.id, retrieved.status, retrieved.output_text) == (created.id, "completed", "Kept answer.")
    assert retrieved.usage.total_tokens == created.usage.total_tokens
    with pytest.raises(openai.NotFoundError):
        await openai_for("bob").responses.retrieve(created.id)
    with pytest.raises(openai.AuthenticationError):
        await openai_for(api_key="not-a-token").responses.retrieve(created.id)


async def test_a_response_is_replayed_after_a_sequence_number_as_first_streamed(app, openai_for, openai_server):
    openai_server.script([Reply(text="One two three.")])
    client = openai_for("alice")
    first = await streamed(client, model="support", input="Count")

    replay = await client.responses.retrieve(first[-1].response.id, stream=True, starting_after=4)
    replayed = [event async for event in replay]

    assert [(e.type, e.sequence_number) for e in replayed] == [(e.type, e.sequence_number) for e in first[5:]]
    assert [e.delta for e in replayed if e.type == "response.output_text.delta"] == ["two ", "three."]
    assert replayed[-1].response.output_text == "One two three."


async def test_a_response_no_longer_kept_is_replayed_from_the_stored_answer(app, openai_for, openai_server, settings):
    settings.CHAT_STREAM_REPLAY_SECONDS = 0  # the turn's events are forgotten as soon as it ends
    openai_server.script([Reply(text="One two three.")])
    client = openai_for("alice")
    created = await client.responses.create(model="support", input="Count")
    await wait_for_running_turns()

    replayed = [event async for event in await client.responses.retrieve(created.id, stream=True)]

    assert [e.type for e in replayed] == [*STREAM_ORDER[:5], *STREAM_ORDER[-4:]]
    assert replayed[4].delta == "One two three."


async def test_citations_of_a_knowledge_base_are_url_citation_annotations(app, openai_for, openai_server, http):
    admin = {"Authorization": f"Bearer {bearer_token('ops', admin=True)}"}
    base = {"knowledgeBaseId": "handbook", "name": "Handbook", "description": "The warehouse handbook."}
    assert (await http.post("/api/chat-admin/knowledge-base", json={"knowledgeBase": base}, headers=admin)).status_code == 200
    document = {
        "title": "Deliveries",
        "text": "# Deliveries\n\nSaturday deliveries leave from dock seven.",
        "sourceUrl": "https://docs.example/deliveries",
    }
    added = await http.post("/api/chat-admin/knowledge-base/handbook/documents", json={"document": document}, headers=admin)
    assert added.status_code == 200
    await AgentDefinition.objects.filter(pk="helper").aupdate(knowledge_bases=[{"id": "handbook"}])
    openai_server.script([Reply(tool_calls=[ToolCall("search_handbook", {"query": "Saturday deliveries"})]), Reply(text="Dock seven [1].")])

    response = await openai_for("alice").responses.create(model="support", input="Where do Saturday deliveries leave from?")
    await wait_for_running_turns()

    (annotation,) = response.output[0].content[0].annotations
    assert (annotation.type, annotation.url, annotation.title) == ("url_citation", "https://docs.example/deliveries", "Deliveries")
    assert response.output_text[annotation.start_index : annotation.end_index] == "[1]"


async def test_a_response_stopped_by_its_user_is_incomplete_with_the_text_so_far(app, openai_for, openai_server, http):
    openai_server.script([Reply(chunks=[f"word{n} " for n in range(100)], token_delay=0.03)])  # three seconds
    answering = asyncio.create_task(openai_for("alice").responses.create(model="support", input="Tell me a long story"))
    while not await ChatMessage.objects.filter(source="user").aexists():
        await asyncio.sleep(0.05)
    session = await ChatSession.objects.aget()
    await asyncio.sleep(0.3)

    stop = await http.post(f"/api/chat/sessions/{session.pk}/stop", json={}, headers=authorized())
    response = await answering
    await wait_for_running_turns()

    assert stop.json()["stopped"] is True
    assert (response.status, response.incomplete_details.reason) == ("incomplete", "stopped")
    assert response.output_text.startswith("word0 ") and not response.output_text.endswith("word99 ")
    assert response.output_text == (await ChatMessage.objects.aget(pk=response.id)).message


async def test_a_response_waiting_for_an_approval_is_incomplete(app, openai_for, openai_server, settings):
    settings.CHAT_STREAM_REPLAY_SECONDS = 0  # its events forgotten once it ends: retrieving it reads the stored answer
    await sync_to_async(ToolDefinitionFactory)(tool_id="refunds@1", approval={"required": True})
    await AgentDefinition.objects.filter(pk="helper").aupdate(tool_ids=["refunds@1"])
    openai_server.script([Reply(text="Let me add that.", tool_calls=[ToolCall("add", {"a": 2, "b": 3})])])

    events = await streamed(openai_for("alice"), model="support", input="Add 2 and 3")

    assert events[-1].type == "response.incomplete"
    response = events[-1].response
    assert (response.status, response.incomplete_details.reason, response.output_text) == (
        "incomplete",
        "awaiting_approval",
        "Let me add that.",
    )
    retrieved = await openai_for("alice").responses.retrieve(response.id)
    assert (retrieved.status, retrieved.incomplete_details.reason) == ("incomplete", "awaiting_approval")
