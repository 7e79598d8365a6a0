"""A turn survives the failures of what it depends on (docs/faults.md): a model that hangs,
stalls, dies mid-answer or fails for a while; a database connection the server closed; a client
that floods its socket or sends JSON nested beyond reason. Each ends with one `error` (or the
answer), the session handed on, and what the user saw stored."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection

from chat.sessions.models import ChatMessage
from chat.turn import wait_for_running_turns
from chatplatform.asgi import application
from tests.conftest import bearer_token
from tests.converse.helpers import body, converse, converse_sse
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

needs_postgres = pytest.mark.skipif(connection.vendor != "postgresql", reason="pg_terminate_backend is PostgreSQL's")


async def _answer_of(session_id: str) -> ChatMessage:
    return await ChatMessage.objects.filter(session_id=session_id, source="assistant").order_by("-timestamp").afirst()


async def test_a_model_that_never_answers_fails_the_turn_within_the_first_token_timeout(app, async_client_for, openai_server, settings):
    settings.CHAT_MODEL_FIRST_TOKEN_TIMEOUT = 0.5
    openai_server.script([Reply(text="Far too late.", first_token_delay=30)])

    started = time.perf_counter()
    _, events = await converse_sse(async_client_for("alice"))

    assert time.perf_counter() - started < 2.5
    assert [name for name, _ in events] == ["session", "error"]
    error = events[-1][1]
    assert error["code"] == "INTERNAL_ERROR"
    assert "openai:test-model" in error["error"] and "no answer within 0.5 s" in error["error"]
    assert len(openai_server.requests) == 1, "a silent server is not asked again"
    answer = await _answer_of(events[0][1]["sessionId"])
    assert answer.message == "" and answer.error["code"] == "INTERNAL_ERROR"


async def test_a_model_that_stalls_after_its_first_tokens_is_not_asked_again_and_its_text_is_kept(
    app, async_client_for, openai_server, settings
):
    settings.CHAT_MODEL_IDLE_TIMEOUT = 0.5
    openai_server.script([Reply(chunks=["Half ", "an ", "answer"], token_delay=30)])

    started = time.perf_counter()
    _, events = await converse_sse(async_client_for("alice"))

    assert time.perf_counter() - started < 2.5
    assert [name for name, _ in events] == ["session", "delta", "error"]
    assert "nothing came for 0.5 s" in events[-1][1]["error"]
    assert len(openai_server.requests) == 1, "no retry once text was streamed"
    answer = await _answer_of(events[0][1]["sessionId"])
    assert answer.message == "Half " and "stalled" in answer.error["message"]


async def test_a_model_that_dies_mid_answer_keeps_what_was_streamed_and_the_history_alternates(app, async_client_for, openai_server):
    openai_server.script([Reply(text="one two three four five", break_after=3, completion_tokens=99)])
    client = async_client_for("alice")

    _, events = await converse_sse(client, message="Count to five")

    assert [name for name, _ in events] == ["session", "delta", "delta", "delta", "error"]
    session_id = events[0][1]["sessionId"]
    answer = await _answer_of(session_id)
    assert answer.message == "one two three "
    assert answer.error == {"code": "INTERNAL_ERROR", "message": events[-1][1]["error"]}
    assert answer.usage["outputTokens"] == 3, "usage counts what was received"

    messages = (await client.request("GET", f"/api/chat/sessions/{session_id}/messages")).json()["messages"]
    assert [m["source"] for m in messages] == ["user", "assistant"]
    assert messages[1]["error"]["code"] == "INTERNAL_ERROR" and messages[1]["message"] == "one two three "

    openai_server.script([Reply(text="Sorry, again: one two three four five.")])
    _, events = await converse_sse(client, sessionId=session_id, message="Go on")
    assert events[-2][0] == "done"
    sent = openai_server.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[2]["content"] == "one two three "


async def test_a_model_that_answers_503_twice_then_200_answers_the_turn(app, async_client_for, openai_server):
    openai_server.script([Reply(status=503, headers={"retry-after-ms": "1"})] * 2 + [Reply(text="Third time lucky.")])

    response = await converse(async_client_for("alice"))

    assert response.status_code == 200
    assert response.json()["response"] == "Third time lucky."
    assert len(openai_server.requests) == 3


async def _terminate_the_turns_connections() -> int:
    """What a failover or a restart does to the platform: the connections of the turns' database
    threads closed by the server (the test harness's own are spared: its teardown needs them)."""
    from chatplatform.db import _executor, on_db_thread

    threads = _executor._max_workers
    barrier = threading.Barrier(threads, timeout=5)

    def backend_pid() -> int:
        barrier.wait()  # one call per thread: each holds its thread until all have come
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return cursor.fetchone()[0]

    pids = await asyncio.gather(*(on_db_thread(backend_pid)() for _ in range(threads)))

    def terminate() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM unnest(%s::int[]) AS pid", [list(pids)])
            terminated = cursor.fetchone()[0]
            # pg_terminate_backend only signals: the backends exit (and close their sockets) a moment later.
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [list(pids)])
                if cursor.fetchone()[0] == 0:
                    break
                time.sleep(0.01)
            return terminated

    return await sync_to_async(terminate)()


@needs_postgres
async def test_connections_the_database_closed_between_turns_are_replaced_before_the_next_turn(app, async_client_for, openai_server):
    client = async_client_for("alice")
    openai_server.script([Reply(text="First."), Reply(text="Second.")])
    first = await converse(client)
    assert first.status_code == 200

    assert await _terminate_the_turns_connections() >= 1
    second = await converse(client, sessionId=first.json()["sessionId"])

    assert second.status_code == 200, second.json()
    assert second.json()["response"] == "Second."


@needs_postgres
async def test_connections_closed_during_a_stream_do_not_lose_the_answer_or_hold_the_session(app, async_client_for, openai_server):
    client = async_client_for("alice")
    openai_server.script([Reply(text="Kept. "), Reply(text=" ".join(f"w{i}" for i in range(20)), token_delay=0.02), Reply(text="Next.")])
    session_id = (await converse(client)).json()["sessionId"]

    response = await client.post("/api/chat/converse", body(sessionId=session_id), headers={"Accept": "text/event-stream"})
    stream = response.streaming_content
    assert b"event: session" in await anext(stream)
    await _terminate_the_turns_connections()
    rest = b"".join([chunk async for chunk in stream])
    await wait_for_running_turns()

    assert b"event: done" in rest or b"event: error" in rest
    answer = await _answer_of(session_id)
    assert answer.message.startswith("w0 w1")
    started = time.perf_counter()
    following = await converse(client, sessionId=session_id)
    assert following.status_code == 200 and following.json()["response"] == "Next."
    assert time.perf_counter() - started < 2


async def _frames_until(socket: WebsocketCommunicator, count: int, timeout: float = 10) -> list[dict]:
    frames = []
    while sum(frame["type"] in {"done", "error"} for frame in frames) < count:
        frames.append(await socket.receive_json_from(timeout=timeout))
    return frames


async def test_turns_beyond_what_a_socket_may_queue_are_refused_at_once_and_the_rest_answered(app, openai_server, settings):
    settings.CHAT_WS_MAX_QUEUED_TURNS = 2
    openai_server.script(lambda request: Reply(text="Answered.", first_token_delay=0.2))
    socket = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await socket.connect())[0]
    for number in range(5):
        await socket.send_json_to(body(message=f"turn {number}"))

    frames = await _frames_until(socket, 5)
    await socket.disconnect()
    await wait_for_running_turns()

    ends = [frame for frame in frames if frame["type"] in {"done", "error"}]
    assert [frame["type"] for frame in ends[:3]] == ["error"] * 3, "refused at once, before any answer"
    assert all("at most 2 turns" in frame["error"] for frame in ends[:3])
    assert [frame["type"] for frame in ends[3:]] == ["done", "done"]


async def test_turns_accepted_on_a_socket_that_closes_at_once_are_all_run_and_stored(app, openai_server, settings):
    settings.CHAT_WS_MAX_QUEUED_TURNS = 3
    # Slow enough that no turn is answered (freeing its place) before all 50 messages are received.
    openai_server.script(lambda request: Reply(text="Stored anyway.", first_token_delay=0.5))
    socket = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await socket.connect())[0]
    for number in range(50):
        await socket.send_json_to(body(message=f"turn {number}"))
    await socket.disconnect()
    await wait_for_running_turns()

    answers = ChatMessage.objects.filter(user_id="alice", source="assistant", error__isnull=True)
    assert await answers.acount() == 3
    assert len(openai_server.requests) == 3


async def test_json_nested_beyond_reason_gets_an_error_and_the_socket_stays_usable(app, openai_server):
    openai_server.script([Reply(text="Still here.")])
    socket = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await socket.connect())[0]

    await socket.send_to(text_data="[" * 100_000 + "]" * 100_000)
    refused = await socket.receive_json_from(timeout=10)
    await socket.send_json_to(body())
    frames = await _frames_until(socket, 1)
    await socket.disconnect()
    await wait_for_running_turns()

    assert refused["type"] == "error" and refused["code"] == "INVALID_REQUEST" and "body" in refused["error"]
    assert frames[-1]["type"] == "done" and frames[-1]["response"] == "Still here."
    await asyncio.sleep(0)


def _admin_session_page(session_id: str) -> str:
    from django.test import Client

    from chat.users.models import ChatUser

    browser = Client()
    browser.force_login(ChatUser.objects.create_superuser("faults-admin"))
    return browser.get(f"/admin/chat/chatsession/{session_id}/change/").content.decode()


async def test_the_admin_shows_a_failed_answer_with_its_reason(app, async_client_for, openai_server):
    openai_server.script([Reply(text="one two three", break_after=1)])
    _, events = await converse_sse(async_client_for("alice"))

    html = await sync_to_async(_admin_session_page)(events[0][1]["sessionId"])

    assert "INTERNAL_ERROR: the model provider failed" in html
