"""One way into a turn: the same request gets the same answer through every transport (JSON, SSE,
WebSocket) and credential (bearer token, `session` cookie), and is counted once against the budget."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from chat.turn import wait_for_running_turns
from chat.users.models import ChatUser
from chatplatform.asgi import application
from tests.asgi_client import AsgiClient
from tests.conftest import bearer_token
from tests.converse.helpers import body, parse_sse
from tests.factories import ChatAppFactory
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 5
CSRF = "c" * 32
OUTCOMES = ["ok", "400", "401", "403", "404", "429"]


def _signed_in_cookie(user_id: str) -> str:
    user, _ = ChatUser.objects.get_or_create(user_id=user_id)
    browser = Client()
    browser.force_login(user)
    return browser.cookies["session"].value


async def _credentials(kind: str, outcome: str) -> dict[str, str]:
    """Request headers for a credential; a broken one when the outcome is 401."""
    if kind == "bearer":
        return {"authorization": "Bearer not-a-token" if outcome == "401" else f"Bearer {bearer_token('alice')}"}
    session = "not-a-session" if outcome == "401" else await sync_to_async(_signed_in_cookie)("alice")
    return {"cookie": f"session={session}; csrftoken={CSRF}", "x-csrftoken": CSRF, "origin": "http://testserver"}


def _body(outcome: str) -> dict[str, Any]:
    return {
        "400": lambda: body(message=None),
        "403": lambda: body(chatAppId="closed"),
        "404": lambda: body(chatAppId="missing"),
    }.get(outcome, body)()


async def _http(headers: dict[str, str], data: dict[str, Any], *, sse: bool) -> tuple[int, dict[str, str], Any]:
    accept = {"accept": "text/event-stream"} if sse else {}
    response = await AsgiClient().post("/api/chat/converse", data, headers={**headers, **accept})
    if response.streaming:
        events = parse_sse(await response.read())
        return response.status_code, response.headers, dict(events)["done"]
    return response.status_code, response.headers, response.json()


async def _websocket(headers: dict[str, str], data: dict[str, Any]) -> tuple[int | None, Any]:
    """(close code when the socket was refused, else None; the `done` or `error` frame without its type)."""
    path, socket_headers = "/ws/chat/converse", []
    if "authorization" in headers:
        path += f"?token={headers['authorization'].removeprefix('Bearer ')}"
    else:
        socket_headers = [(b"cookie", headers["cookie"].encode()), (b"origin", b"http://testserver"), (b"host", b"testserver")]
    socket = WebsocketCommunicator(application, path, headers=socket_headers)
    connected, _ = await socket.connect()
    assert connected  # a refused socket is accepted, then closed with its code and reason
    if not await socket.receive_nothing(0.05):
        closed = await socket.receive_output()
        assert closed["type"] == "websocket.close", closed
        return closed["code"], None
    try:
        await socket.send_json_to(data)
        while (frame := await socket.receive_json_from(timeout=10))["type"] not in {"done", "error"}:
            pass
    finally:
        await socket.disconnect()
    frame.pop("type")
    return None, frame


def _without_ids(answer: Any) -> Any:
    if not isinstance(answer, dict):
        return answer
    return {key: value for key, value in answer.items() if key not in {"sessionId", "messageId", "eventId"}}


async def _remaining(headers: dict[str, str]) -> str:
    """What is left of the caller's Chat API budget, read by one more request (which it counts)."""
    probe = await AsgiClient().request("GET", "/api/chat/user", headers=headers)
    return probe.headers["x-ratelimit-remaining"]


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("credential", ["bearer", "cookie"])
async def test_a_request_gets_the_same_answer_through_every_transport_and_is_counted_once(
    credential, outcome, settings, openai_server, monkeypatch, transactional_db
):
    monkeypatch.setattr("chatplatform.api.ratelimit.now", lambda: 1_800_000_010.0)
    settings.CHAT_RATE_LIMITS = {**settings.CHAT_RATE_LIMITS, "chat": LIMIT}
    await sync_to_async(_apps)()
    openai_server.script(lambda request: Reply(text="Same answer."))
    headers = await _credentials(credential, outcome)
    data = _body(outcome)
    answers, budgets = {}, {}
    for transport in ("json", "sse", "websocket"):
        await sync_to_async(_reset_budget)()
        if outcome == "429":  # the budget is spent before the request
            for _ in range(LIMIT):
                await AsgiClient().request("GET", "/api/chat/user", headers=headers)
        if transport == "websocket":
            refused_with, answer = await _websocket(headers, data)
            answers[transport] = ("closed", refused_with) if refused_with else ("frame", _without_ids(answer))
        else:
            status, response_headers, answer = await _http(headers, data, sse=transport == "sse")
            answers[transport] = (status, _without_ids(answer))
            rate = {name: response_headers.get(name) for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")}
            assert rate["x-ratelimit-limit"] == str(LIMIT), response_headers
            budgets[transport] = rate
        await wait_for_running_turns()
        budgets[f"{transport} then"] = await _remaining(headers)

    json_status, json_answer = answers["json"]
    assert json_status == {"ok": 200, "400": 400, "401": 401, "403": 403, "404": 404, "429": 429}[outcome], json_answer
    assert answers["sse"] == answers["json"]
    assert budgets["sse"] == budgets["json"]
    if outcome == "401":
        assert answers["websocket"] == ("closed", 4401)  # a socket is authenticated when it opens
    else:
        assert answers["websocket"] == ("frame", json_answer)
    # Each transport counted its request once: the probe after it finds the budget less the two of them.
    counted_once = "0" if outcome == "429" else str(LIMIT - 2)
    assert budgets["json then"] == budgets["sse then"] == counted_once, budgets
    # A socket refused when it opens ran no turn: only the probe counts.
    assert budgets["websocket then"] == (str(LIMIT - 1) if outcome == "401" else counted_once), budgets


def _apps() -> None:
    ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="openai:test-model")
    ChatAppFactory(chat_app_id="closed", agent__agent_id="other", enabled=False)


def _reset_budget() -> None:
    from django.core.cache import cache

    cache.clear()


async def test_a_socket_opened_with_the_cookie_is_signed_out_with_it(openai_server):
    await sync_to_async(_apps)()
    openai_server.script(lambda request: Reply(text="Signed in."))
    headers = await _credentials("cookie", "ok")
    browser = [(b"cookie", headers["cookie"].encode()), (b"origin", b"http://testserver"), (b"host", b"testserver")]
    socket = WebsocketCommunicator(application, "/ws/chat/converse", headers=browser)
    assert (await socket.connect())[0]
    await socket.send_json_to(body())
    while (await socket.receive_json_from(timeout=10))["type"] != "done":
        pass

    signed_out = await AsgiClient().request("POST", "/accounts/logout/", headers=headers)
    assert signed_out.status_code == 302
    await socket.send_json_to(body())
    while (refused := await socket.receive_json_from(timeout=10))["type"] != "error":
        pass  # the first turn's title
    closed = await socket.receive_output(timeout=10)
    await wait_for_running_turns()

    assert refused["type"] == "error" and refused["code"] == "AUTHENTICATION_REQUIRED" and "signed out" in refused["error"]
    assert closed == {"type": "websocket.close", "code": 4401, "reason": refused["error"]}
    assert len(openai_server.requests) == 1
