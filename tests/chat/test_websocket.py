"""`/ws/chat/converse` accepts authenticated sockets only (CONTRACT §7)."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from chatplatform.asgi import application
from tests.conftest import bearer_token

pytestmark = pytest.mark.django_db(transaction=True)


async def test_socket_with_a_token_is_accepted():
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_json_to({"message": "hi"})
    event = await communicator.receive_json_from()
    assert event["type"] == "error" and event["success"] is False
    await communicator.disconnect()


@pytest.mark.parametrize("query", ["", "?token=garbage", f"?token={bearer_token('alice', expires_in=-60)}"])
async def test_socket_without_valid_credentials_is_closed(query):
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse{query}")
    connected, code = await communicator.connect()
    assert not connected
    assert code == 4401


async def test_socket_from_a_foreign_origin_is_refused():
    communicator = WebsocketCommunicator(
        application, f"/ws/chat/converse?token={bearer_token('alice')}", headers=[(b"origin", b"https://evil.example")]
    )
    connected, _ = await communicator.connect()
    assert not connected


async def test_socket_from_the_sites_own_origin_is_accepted():
    communicator = WebsocketCommunicator(
        application, f"/ws/chat/converse?token={bearer_token('alice')}", headers=[(b"origin", b"http://127.0.0.1:8000")]
    )
    connected, _ = await communicator.connect()
    assert connected
    await communicator.disconnect()
