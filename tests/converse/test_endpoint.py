"""`/api/chat/converse` over HTTP (chat/doors/converse.py): what it answers
besides the turn itself (the turn's answers through every transport: test_one_way_in.py)."""

from __future__ import annotations

import asyncio
import os

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.cache import caches
from django.test import Client

from chat.sessions.models import ChatMessage
from chat.turn import wait_for_running_turns
from chat.users.models import ChatUser
from chatplatform.asgi import application
from tests.asgi_client import AsgiClient
from tests.conftest import assert_error, bearer_token
from tests.converse.helpers import body, parse_sse
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

SSE = {"Accept": "text/event-stream"}


async def test_an_answer_carries_the_security_and_rate_limit_headers_every_api_answer_carries(app, openai_server):
    token = {"AUTHORIZATION": f"Bearer {bearer_token('alice')}"}
    other_api = await AsgiClient(**token).request("GET", "/api/chat/user")
    for accept in ("application/json", "text/event-stream"):
        openai_server.script([Reply(text="Hi.")])
        response = await AsgiClient(**token).post("/api/chat/converse", body(), headers={"Accept": accept})
        await response.read()
        await wait_for_running_turns()
        assert response.status_code == 200
        for name in ("x-content-type-options", "x-frame-options", "referrer-policy", "cross-origin-opener-policy"):
            assert response[name] == other_api[name], name
        assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "allow"} <= set(response.headers)


async def test_another_method_is_refused_with_the_methods_allowed(app):
    response = await AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}").request("GET", "/api/chat/converse")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert response["Allow"] == "POST, OPTIONS"


async def test_the_rate_limit_counts_converse_through_the_endpoint_and_answers_429(app, settings, openai_server, monkeypatch):
    monkeypatch.setattr("chatplatform.api.ratelimit.now", lambda: 1_800_000_010.0)
    settings.CHAT_RATE_LIMITS = {**settings.CHAT_RATE_LIMITS, "chat": 1}
    client = AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    openai_server.script([Reply(text="once")])
    first = await client.post("/api/chat/converse", body())
    assert first.status_code == 200 and first["X-RateLimit-Remaining"] == "0"

    refused = await client.post("/api/chat/converse", body(), headers=SSE)
    assert_error(refused, 429, "RATE_LIMIT_EXCEEDED")
    assert 1 <= int(refused["Retry-After"]) <= 60
    await wait_for_running_turns()
    assert len(openai_server.requests) == 1


async def test_turns_sent_at_once_are_each_counted_once_against_the_budget(app, settings, openai_server, monkeypatch):
    """A burst of turns is counted together (with Redis: one round trip): each turn still gets a
    count of its own, and exactly the budget's worth are served."""
    monkeypatch.setattr("chatplatform.api.ratelimit.now", lambda: 1_800_000_010.0)
    settings.CHAT_RATE_LIMITS = {**settings.CHAT_RATE_LIMITS, "chat": 6}
    client = AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    openai_server.script([Reply(text="Hi.")] * 6)
    first = await client.post("/api/chat/converse", body())  # the token is verified: the burst is counted on the loop
    assert first["X-RateLimit-Remaining"] == "5"

    burst = await asyncio.gather(*(client.post("/api/chat/converse", body(), headers=SSE) for _ in range(8)))
    for response in burst:
        await response.read()
    await wait_for_running_turns()

    served = [response for response in burst if response.status_code == 200]
    assert sorted(response["X-RateLimit-Remaining"] for response in served) == ["0", "1", "2", "3", "4"]
    for refused in (response for response in burst if response.status_code != 200):
        assert_error(refused, 429, "RATE_LIMIT_EXCEEDED")
    assert len(openai_server.requests) == 6


async def test_a_body_larger_than_django_accepts_is_refused_before_anything_runs(app, settings, openai_server):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    response = await client.post("/api/chat/converse", body(message="x" * 2000))
    assert_error(response, 413, "PAYLOAD_TOO_LARGE", mentions="body")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert openai_server.requests == []
    assert not await ChatUser.objects.filter(user_id="alice").aexists()


async def test_a_host_django_does_not_allow_gets_djangos_answer(app, openai_server):
    client = AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    response = await client.post("/api/chat/converse", body(), headers={"Host": "evil.example"})
    assert response.status_code == 400
    assert openai_server.requests == []


def _logged_in_cookies(user_id: str) -> dict[str, str]:
    user, _ = ChatUser.objects.get_or_create(user_id=user_id)
    browser = Client()
    browser.force_login(user)
    return {"session": browser.cookies["session"].value, "csrftoken": "c" * 32}


async def test_a_browser_session_converses_with_its_csrf_token(app, openai_server):
    cookies = await sync_to_async(_logged_in_cookies)("alice")
    cookie_header = "; ".join(f"{name}={value}" for name, value in cookies.items())
    browser = AsgiClient(COOKIE=cookie_header)

    refused = await browser.post("/api/chat/converse", body(), headers=SSE)
    assert_error(refused, 403, mentions="CSRF")

    openai_server.script([Reply(text="Hello browser.")])
    response = await browser.post("/api/chat/converse", body(), headers={**SSE, "X-CSRFToken": cookies["csrftoken"]})
    events = parse_sse(await response.read())
    await wait_for_running_turns()
    assert response.status_code == 200
    assert dict(events)["done"]["response"] == "Hello browser."
    answer = await ChatMessage.objects.aget(pk=dict(events)["done"]["messageId"])
    assert answer.user_id == "alice"


async def test_a_client_leaving_before_its_body_is_complete_starts_nothing(app, openai_server):
    from asgiref.testing import ApplicationCommunicator

    from chatplatform.asgi import application

    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/chat/converse",
        "raw_path": b"/api/chat/converse",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {bearer_token('alice')}".encode())],
        "client": ("127.0.0.1", 40000),
        "server": ("testserver", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b'{"chatAppId": "sup', "more_body": True})
    await communicator.send_input({"type": "http.disconnect"})
    await communicator.wait(timeout=5)
    assert await communicator.receive_nothing()
    await asyncio.sleep(0.05)
    assert openai_server.requests == []


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="the batched round trip of the rate limit is Redis's")
async def test_a_failed_round_trip_of_the_rate_limit_fails_the_turns_waiting_on_it_and_no_later_one(
    app, settings, openai_server, monkeypatch
):
    """Turns counted together share the round trip: when Redis answers it with an error, each of
    them gets an `error` event, and the turns after it are counted (and served) as usual."""
    now = 1_800_000_010
    monkeypatch.setattr("chatplatform.api.ratelimit.now", lambda: float(now))
    window = settings.CHAT_RATE_LIMIT_WINDOW_SECONDS
    key = f"rl:chat:user:alice:{now - now % window}"
    redis = caches["default"]._cache.get_client(write=True)
    redis.set(key, "not a count")  # INCRBY fails on it
    sockets = [WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}") for _ in range(3)]
    try:
        for socket in sockets:
            assert (await socket.connect())[0]
        openai_server.script([Reply(text="Counted again.")] * 3)
        await asyncio.gather(*(socket.send_json_to(body()) for socket in sockets))
        for socket in sockets:
            frame = await socket.receive_json_from(timeout=10)
            assert frame == {"type": "error", "success": False, "error": frame["error"], "code": "INTERNAL_ERROR"}
        redis.delete(key)
        await asyncio.gather(*(socket.send_json_to(body()) for socket in sockets))
        for socket in sockets:
            frames = [await socket.receive_json_from(timeout=10)]
            while frames[-1]["type"] not in {"done", "error"}:
                frames.append(await socket.receive_json_from(timeout=10))
            assert frames[0]["type"] == "session" and frames[-1]["response"] == "Counted again."
        assert int(redis.get(key)) == 3, "each served turn counted once, in a window the failure left empty"
    finally:
        redis.delete(key)
        for socket in sockets:
            await socket.disconnect()
    await wait_for_running_turns()
    assert len(openai_server.requests) == 3
