"""A streamed turn outlives its connection (docs/api.md, "Resume, stop and approvals"): its events
carry ids, a client resumes after the last one it saw, anyone may stop it, and a second message
follows the chat app's concurrentTurns strategy. On the embedded default: one process."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from chat.models import ChatMessage, ChatSession
from chat.turn import wait_for_running_turns
from tests.asgi_client import AsgiClient
from tests.conftest import assert_error
from tests.converse.helpers import body, parse_sse
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = [f"word{n} " for n in range(40)]
SLOW = Reply(chunks=WORDS, token_delay=0.05)  # two seconds of streaming


def sse_blocks(raw: bytes) -> list[dict[str, str]]:
    """Each SSE event as its fields (id, event, data)."""
    blocks = []
    for block in raw.decode().split("\n\n"):
        if block.strip() and not block.startswith(":"):
            blocks.append(dict(line.split(": ", 1) for line in block.split("\n")))
    return blocks


async def start_stream(client: AsgiClient, **overrides: Any) -> Any:
    return await client.post("/api/chat/converse", body(**overrides), headers={"Accept": "text/event-stream"})


async def read_until(response: Any, count: int) -> tuple[bytes, Any]:
    """The first chunks of a stream holding at least `count` events; the iterator, to go on."""
    chunks = response.streaming_content.__aiter__()
    raw = b""
    while len(sse_blocks(raw)) < count:
        raw += await chunks.__anext__()
    return raw, chunks


async def test_every_event_of_a_streamed_turn_has_an_id_of_its_answer(app, async_client_for, openai_server):
    openai_server.script([Reply(text="One two three.")])
    response = await start_stream(async_client_for("alice"))
    blocks = sse_blocks(b"".join([chunk async for chunk in response.streaming_content]))
    await wait_for_running_turns()

    session = json.loads(blocks[0]["data"])
    message_id = session["messageId"]
    assert blocks[0]["event"] == "session"
    assert [block["id"] for block in blocks] == [f"{message_id}:{n}" for n in range(1, len(blocks) + 1)]
    done = next(json.loads(block["data"]) for block in blocks if block["event"] == "done")
    assert done["messageId"] == message_id
    assert await ChatMessage.objects.filter(pk=message_id, source="assistant").aexists()


async def test_a_reader_that_resumes_mid_stream_gets_every_later_event_once(app, async_client_for, openai_server):
    openai_server.script([SLOW])
    alice = async_client_for("alice")
    response = await start_stream(alice)
    raw, _ = await read_until(response, 5)
    seen = sse_blocks(raw)
    session_id = json.loads(seen[0]["data"])["sessionId"]
    last = seen[-1]["id"]  # the client drops here (a reload) ...

    resumed = await alice.request("GET", f"/api/chat/sessions/{session_id}/stream", headers={"Last-Event-ID": last})
    assert resumed.status_code == 200
    rest = sse_blocks(b"".join([chunk async for chunk in resumed.streaming_content]))
    await wait_for_running_turns()

    events = seen + rest
    numbers = [int(block["id"].rsplit(":", 1)[1]) for block in events]
    assert numbers == list(range(1, len(events) + 1)), "no event lost or repeated"
    text = "".join(json.loads(block["data"])["text"] for block in events if block["event"] == "delta")
    stored = await ChatMessage.objects.aget(session_id=session_id, source="assistant")
    assert text == stored.message == "".join(WORDS)


async def test_two_readers_of_one_turn_each_get_every_event(app, async_client_for, openai_server):
    openai_server.script([SLOW])
    alice = async_client_for("alice")
    first = await start_stream(alice)
    raw, rest_of_first = await read_until(first, 1)
    session_id = json.loads(sse_blocks(raw)[0]["data"])["sessionId"]
    second = await alice.request("GET", f"/api/chat/sessions/{session_id}/stream")  # another tab, from the start

    async def rest(chunks: Any) -> bytes:
        return b"".join([chunk async for chunk in chunks])

    first_raw, second_raw = await asyncio.gather(rest(rest_of_first), rest(second.streaming_content))
    await wait_for_running_turns()
    assert [b["id"] for b in sse_blocks(raw + first_raw)] == [b["id"] for b in sse_blocks(second_raw)]


async def test_resume_of_a_session_with_nothing_running_or_kept_is_204(app, async_client_for, openai_server, settings):
    openai_server.script([Reply(text="Done.")])
    alice = async_client_for("alice")
    response = await start_stream(alice)
    session_id = parse_sse(await response.read())[0][1]["sessionId"]
    await wait_for_running_turns()
    # Kept for CHAT_STREAM_REPLAY_SECONDS after it ended: replayed whole.
    kept = await alice.request("GET", f"/api/chat/sessions/{session_id}/stream")
    assert next(event for event, _ in parse_sse(await kept.read())) == "session"

    other = await ChatSession.objects.acreate(user_id=(await _user("alice")).pk, chat_app_id="support", agent_id="helper")
    idle = await alice.request("GET", f"/api/chat/sessions/{other.pk}/stream")
    assert idle.status_code == 204


async def test_another_users_session_is_not_found_for_resume_and_stop(app, async_client_for, openai_server):
    openai_server.script([Reply(text="Mine.")])
    response = await start_stream(async_client_for("alice"))
    session_id = parse_sse(await response.read())[0][1]["sessionId"]
    await wait_for_running_turns()
    bob = async_client_for("bob")
    assert_error(await bob.request("GET", f"/api/chat/sessions/{session_id}/stream"), 404, "INVALID_SESSION_ID")
    assert_error(await bob.post(f"/api/chat/sessions/{session_id}/stop", {}), 404, "INVALID_SESSION_ID")
    assert_error(await bob.post("/api/chat/sessions/not-a-uuid/stop", {}), 404, "INVALID_SESSION_ID")


async def test_stop_ends_the_turn_within_two_seconds_and_keeps_what_was_streamed(app, async_client_for, openai_server):
    openai_server.script([Reply(chunks=WORDS * 10, token_delay=0.05)])  # twenty seconds if not stopped
    alice = async_client_for("alice")
    response = await start_stream(alice)
    raw, chunks = await read_until(response, 4)
    session_id = json.loads(sse_blocks(raw)[0]["data"])["sessionId"]

    asked = time.monotonic()
    stop = await alice.post(f"/api/chat/sessions/{session_id}/stop", {})
    assert stop.status_code == 200 and stop.json() == {"success": True, "stopped": True}
    raw += b"".join([chunk async for chunk in chunks])
    assert time.monotonic() - asked < 2
    await wait_for_running_turns()

    blocks = sse_blocks(raw)
    done = json.loads(next(b["data"] for b in blocks if b["event"] == "done"))
    streamed = "".join(json.loads(b["data"])["text"] for b in blocks if b["event"] == "delta")
    assert done["stopped"] is True and done["response"] == streamed
    stored = await ChatMessage.objects.aget(pk=done["messageId"])
    assert stored.message == streamed and stored.stop_reason == "user"
    messages = (await alice.request("GET", f"/api/chat/sessions/{session_id}/messages")).json()["messages"]
    assert messages[-1]["stopReason"] == "user"
    again = await alice.post(f"/api/chat/sessions/{session_id}/stop", {})
    assert again.json() == {"success": True, "stopped": False}


async def _user(user_id: str) -> Any:
    from chat.models import ChatUser

    return await ChatUser.objects.aget(pk=user_id)


async def _two_at_once(app: Any, client: AsgiClient, strategy: str) -> tuple[str, Any, list[tuple[str, dict[str, Any]]]]:
    """A session, then a slow turn on it and a second message sent while it streams."""
    app.features = {"concurrentTurns": {"strategy": strategy}}
    await app.asave()
    first = await client.post("/api/chat/converse", body(message="first"))
    session_id = first.json()["sessionId"]
    await wait_for_running_turns()
    running = await start_stream(client, sessionId=session_id, message="second")
    raw, chunks = await read_until(running, 3)
    second = await client.post("/api/chat/converse", body(sessionId=session_id, message="third"))
    raw += b"".join([chunk async for chunk in chunks])
    await wait_for_running_turns()
    return session_id, second, parse_sse(raw)


async def test_queue_runs_the_second_message_after_the_running_turn(app, async_client_for, openai_server):
    openai_server.script([Reply(text="One."), SLOW, Reply(text="Three.")])
    session_id, second, streamed = await _two_at_once(app, async_client_for("alice"), "queue")
    assert second.status_code == 200 and second.json()["response"] == "Three."
    assert streamed[-1][0] in {"done", "title"} and "stopped" not in dict(streamed)["done"]
    texts = [m.message async for m in ChatMessage.objects.filter(session_id=session_id).order_by("timestamp")]
    assert texts == ["first", "One.", "second", "".join(WORDS), "third", "Three."]


async def test_reject_answers_409_session_busy_while_a_turn_runs(app, async_client_for, openai_server):
    openai_server.script([Reply(text="One."), SLOW])
    session_id, second, _ = await _two_at_once(app, async_client_for("alice"), "reject")
    assert_error(second, 409, "SESSION_BUSY")
    texts = [m.message async for m in ChatMessage.objects.filter(session_id=session_id).order_by("timestamp")]
    assert texts == ["first", "One.", "second", "".join(WORDS)]


async def test_interrupt_stops_the_running_turn_then_runs_the_new_one(app, async_client_for, openai_server):
    openai_server.script([Reply(text="One."), Reply(chunks=WORDS * 10, token_delay=0.05), Reply(text="Three.")])
    started = time.monotonic()
    session_id, second, streamed = await _two_at_once(app, async_client_for("alice"), "interrupt")
    assert time.monotonic() - started < 8  # the slow answer alone would take twenty seconds
    assert dict(streamed)["done"]["stopped"] is True
    assert second.status_code == 200 and second.json()["response"] == "Three."
    stored = [m async for m in ChatMessage.objects.filter(session_id=session_id).order_by("timestamp")]
    assert [m.message for m in stored][-2:] == ["third", "Three."]
    assert stored[3].stop_reason == "user"
