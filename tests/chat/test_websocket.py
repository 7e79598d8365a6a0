"""`/ws/chat/converse` accepts authenticated sockets only (docs/api.md, "WebSocket")."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from chat.users.models import ChatUser
from chatplatform import inflight
from chatplatform.asgi import application
from tests.conftest import bearer_token
from tests.factories import ChatAppFactory

pytestmark = pytest.mark.django_db(transaction=True)


async def test_socket_with_a_token_is_accepted():
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_json_to({"message": "hi"})
    event = await communicator.receive_json_from()
    assert event["type"] == "error" and event["success"] is False
    await communicator.disconnect()


async def _refusal(communicator: WebsocketCommunicator) -> tuple[int, str]:
    """The close code and reason of a socket accepted only to be closed at once (docs/api.md)."""
    connected, _ = await communicator.connect()
    assert connected, "accepted, so that the client sees the close code and reason"
    closed = await communicator.receive_output(timeout=5)
    assert closed["type"] == "websocket.close", closed
    await communicator.disconnect(timeout=5)  # the client's answer to the close ends the consumer
    return closed["code"], closed["reason"]


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("", "authentication required: send ?token=<JWT> or the session cookie"),
        ("?token=garbage", "invalid token: "),
        (f"?token={bearer_token('alice', expires_in=-60)}", "token expired: get a new token and reconnect"),
    ],
    ids=["missing", "bad", "expired"],
)
async def test_socket_without_valid_credentials_is_closed_with_4401_and_a_reason(query, reason):
    code, given = await _refusal(WebsocketCommunicator(application, f"/ws/chat/converse{query}"))
    assert code == 4401
    assert given.startswith(reason)


@pytest.mark.parametrize(
    "origin",
    [b"https://evil.example", b"http://testserver:9000", b"https://testserver.evil.example", b"null"],
    ids=["foreign", "another-port", "lookalike", "opaque"],
)
async def test_socket_from_a_foreign_origin_is_closed_with_4403_and_a_reason(origin):
    communicator = WebsocketCommunicator(
        application, f"/ws/chat/converse?token={bearer_token('alice')}", headers=[(b"origin", origin), (b"host", b"testserver")]
    )
    assert await _refusal(communicator) == (
        4403,
        "origin not allowed: not this site's scheme, host and port, nor in CSRF_TRUSTED_ORIGINS",
    )


async def _stays_open(headers, query=""):
    """The socket is accepted and not closed: nothing arrives after the handshake."""
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse{query}", headers=headers)
    connected, _ = await communicator.connect()
    quiet = await communicator.receive_nothing(0.2)
    await communicator.disconnect()
    return connected and quiet


async def test_socket_from_a_trusted_origin_on_another_host_is_accepted(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://shop.example", "https://*.apps.example"]
    token = f"?token={bearer_token('alice')}"
    assert await _stays_open([(b"origin", b"https://shop.example"), (b"host", b"testserver")], token)
    assert await _stays_open([(b"origin", b"https://eu.apps.example"), (b"host", b"testserver")], token)


def _signed_in_cookie(user_id: str) -> bytes:
    browser = Client()
    browser.force_login(ChatUser.objects.create_user(user_id))
    return f"session={browser.cookies['session'].value}".encode()


async def test_a_cookie_socket_without_origin_is_closed_with_4401_a_program_brings_a_token():
    cookie = await sync_to_async(_signed_in_cookie)("alice")
    code, reason = await _refusal(WebsocketCommunicator(application, "/ws/chat/converse", headers=[(b"cookie", cookie)]))
    assert code == 4401
    assert reason == "a socket without Origin (a program) must send ?token=<JWT>; the session cookie is for browsers"
    # The same cookie from the site's own page (its Origin, port included) is accepted.
    assert await _stays_open([(b"cookie", cookie), (b"origin", b"http://testserver:8000"), (b"host", b"testserver:8000")])


async def test_socket_opened_while_the_server_drains_is_closed_with_1012(monkeypatch):
    monkeypatch.setattr(inflight, "_accepting", True)  # restored after the test
    inflight.stop_accepting()
    code, reason = await _refusal(WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}"))
    assert (code, reason) == (1012, "the server is shutting down: reconnect")


async def test_a_turn_for_a_forbidden_chat_app_is_an_error_frame_and_the_socket_stays_open():
    await sync_to_async(ChatAppFactory)(chat_app_id="closed", enabled=False)
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await communicator.connect())[0]
    await communicator.send_json_to({"chatAppId": "closed", "agentId": "x", "message": "hi", "features": {}, "source": "user"})
    refused = await communicator.receive_json_from(timeout=10)
    await communicator.send_json_to({})
    again = await communicator.receive_json_from(timeout=10)
    await communicator.disconnect()
    assert refused["type"] == "error" and refused["code"] == "INSUFFICIENT_PERMISSIONS"
    assert again["type"] == "error" and again["code"] == "INVALID_REQUEST"


async def test_socket_from_the_sites_own_origin_is_accepted():
    headers = [(b"origin", b"http://127.0.0.1:8000"), (b"host", b"127.0.0.1:8000")]
    assert await _stays_open(headers, f"?token={bearer_token('alice')}")
