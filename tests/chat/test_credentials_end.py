"""A credential that ends is out at once (docs/api.md, "Authentication", "WebSocket close codes"): a
token past its `exp`, a user an operator deactivated, a cookie that came from a token. Sockets are
checked at each message, requests at the next one."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from chat.turn import wait_for_running_turns
from chat.users.models import ChatUser
from chatplatform.asgi import application
from tests.conftest import assert_error, bearer_token
from tests.factories import ChatAppFactory

pytestmark = pytest.mark.django_db(transaction=True)

TURN = {"chatAppId": "support", "agentId": "helper", "message": "Hello", "features": {}, "source": "user"}
DEACTIVATED = "user is deactivated: an operator switched this account off"


def _app() -> None:
    ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="offline")


async def _turn(socket: WebsocketCommunicator) -> dict[str, Any]:
    """The `done` or `error` frame answering one message."""
    await socket.send_json_to(TURN)
    while (frame := await socket.receive_json_from(timeout=10))["type"] not in {"done", "error"}:
        pass
    return frame


async def _refused_and_closed(socket: WebsocketCommunicator) -> tuple[dict[str, Any], dict[str, Any]]:
    refused = await _turn(socket)
    closed = await socket.receive_output(timeout=10)
    await wait_for_running_turns()
    return refused, closed


def _deactivate_in_the_admin(user_id: str) -> str:
    """An operator selects the user in the Django admin's list and runs "Deactivate"; the message shown."""
    operator = Client()
    operator.force_login(ChatUser.objects.create_superuser("operator", "operator-password-1"))
    page = operator.post("/admin/chat/chatuser/", {"action": "deactivate", "_selected_action": [user_id]}, follow=True)
    assert page.status_code == 200
    return page.content.decode()


def _signed_in(user_id: str) -> Client:
    browser = Client()
    browser.force_login(ChatUser.objects.get_or_create(user_id=user_id)[0])
    return browser


async def test_a_socket_is_closed_with_4401_at_the_first_message_after_its_token_expired():
    await sync_to_async(_app)()
    # A token at the end of its life: past `exp`, within the 30 s leeway for two more seconds.
    socket = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice', expires_in=-28)}")
    assert (await socket.connect())[0]
    assert (await _turn(socket))["type"] == "done"

    await asyncio.sleep(2.5)
    refused, closed = await _refused_and_closed(socket)

    assert refused["code"] == "AUTHENTICATION_REQUIRED" and refused["error"] == "token expired: get a new token and reconnect"
    assert closed == {"type": "websocket.close", "code": 4401, "reason": refused["error"]}


async def test_a_token_socket_is_closed_with_4401_at_the_first_message_after_its_user_is_deactivated():
    await sync_to_async(_app)()
    socket = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await socket.connect())[0]
    assert (await _turn(socket))["type"] == "done"

    page = await sync_to_async(_deactivate_in_the_admin)("alice")
    refused, closed = await _refused_and_closed(socket)

    assert "1 chat user(s) deactivated: they are out at once" in page
    assert refused["code"] == "AUTHENTICATION_REQUIRED" and refused["error"] == DEACTIVATED
    assert closed == {"type": "websocket.close", "code": 4401, "reason": DEACTIVATED}


async def test_a_cookie_socket_is_closed_with_4401_at_the_first_message_after_its_user_is_deactivated():
    await sync_to_async(_app)()
    browser = await sync_to_async(_signed_in)("alice")
    headers = [
        (b"cookie", f"session={browser.cookies['session'].value}".encode()),
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
    ]
    socket = WebsocketCommunicator(application, "/ws/chat/converse", headers=headers)
    assert (await socket.connect())[0]
    assert (await _turn(socket))["type"] == "done"

    await sync_to_async(_deactivate_in_the_admin)("alice")
    refused, closed = await _refused_and_closed(socket)

    assert refused["code"] == "AUTHENTICATION_REQUIRED" and refused["error"] == DEACTIVATED
    assert closed == {"type": "websocket.close", "code": 4401, "reason": DEACTIVATED}


def test_a_deactivated_user_is_refused_at_the_next_request_by_bearer_token_cookie_and_page():
    ChatAppFactory(chat_app_id="support")
    token = Client(HTTP_AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    browser = _signed_in("alice")
    assert token.get("/api/chat/user").status_code == 200
    assert browser.get("/api/chat/user").status_code == 200
    assert browser.get("/chat/support/").status_code == 200

    _deactivate_in_the_admin("alice")

    assert_error(token.get("/api/chat/user"), 401, "AUTHENTICATION_REQUIRED", mentions=DEACTIVATED)
    assert_error(browser.get("/api/chat/user"), 401, "AUTHENTICATION_REQUIRED")
    assert browser.get("/chat/support/")["Location"].startswith("/accounts/login/")


def test_the_cookie_of_a_token_exchange_lives_no_longer_than_the_token():
    browser = Client()
    expires = int(time.time()) + 2
    token = bearer_token("carol", expires_in=2)
    assert browser.post("/api/chat/auth/session", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    cookie = browser.cookies["session"]
    assert int(cookie["max-age"]) <= 2, cookie
    assert browser.get("/api/chat/user").json()["user"]["userId"] == "carol"

    time.sleep(max(0.0, expires - time.time()) + 1)

    # The token is still within its 30 s leeway; the cookie it became has ended with its `exp`.
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token}").get("/api/chat/user").status_code == 200
    assert_error(browser.get("/api/chat/user"), 401, "AUTHENTICATION_REQUIRED")


def test_a_person_signed_in_through_single_sign_on_is_out_of_the_pages_once_deactivated(settings):
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, "chat.users.oidc.ClaimsBackend"]
    settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = "chat-platform", "provider-secret"
    settings.OIDC_OP_TOKEN_ENDPOINT = settings.OIDC_OP_USER_ENDPOINT = "http://127.0.0.1:9/unused"
    settings.OIDC_RP_SIGN_ALGO = "HS256"
    ChatAppFactory(chat_app_id="support")
    browser = Client()
    browser.force_login(ChatUser.objects.create_user("grace-oidc"), backend="chat.users.oidc.ClaimsBackend")
    assert browser.get("/chat/support/").status_code == 200

    _deactivate_in_the_admin("grace-oidc")

    assert browser.get("/chat/support/")["Location"].startswith("/accounts/login/")
    assert_error(browser.get("/api/chat/user"), 401, "AUTHENTICATION_REQUIRED")


async def test_a_cookie_socket_is_closed_with_4401_once_the_cookie_of_a_token_exchange_ended():
    await sync_to_async(_app)()
    browser = Client()
    expires = time.time() + 2
    exchanged = await sync_to_async(browser.post)(
        "/api/chat/auth/session", HTTP_AUTHORIZATION=f"Bearer {bearer_token('carol', expires_in=2)}"
    )
    assert exchanged.status_code == 200
    headers = [
        (b"cookie", f"session={browser.cookies['session'].value}".encode()),
        (b"origin", b"http://testserver"),
        (b"host", b"testserver"),
    ]
    socket = WebsocketCommunicator(application, "/ws/chat/converse", headers=headers)
    assert (await socket.connect())[0]
    assert (await _turn(socket))["type"] == "done"

    await asyncio.sleep(max(0.0, expires - time.time()) + 1)
    refused, closed = await _refused_and_closed(socket)

    signed_out = "signed out: the session this socket was opened with has ended; sign in again"
    assert refused["code"] == "AUTHENTICATION_REQUIRED" and refused["error"] == signed_out
    assert closed == {"type": "websocket.close", "code": 4401, "reason": signed_out}
