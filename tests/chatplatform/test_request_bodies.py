"""Request bodies beyond reason (docs/api.md, "Envelope"): JSON nested deeper than a parser should follow is a
400, a body larger than DATA_UPLOAD_MAX_MEMORY_SIZE a 413, both in the envelope, on every
endpoint and transport (JSON, SSE, WebSocket); never a 500."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from chatplatform.asgi import application
from tests.asgi_client import AsgiClient
from tests.conftest import assert_error, bearer_token

DEEP = "[" * 10_000 + "]" * 10_000
DEEP_OBJECT = '{"a":' * 10_000 + "1" + "}" * 10_000
FIVE_MB = '{"agent": {"agentId": "big", "basePrompt": "' + "x" * (5 * 1024 * 1024) + '"}}'


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["array", "object"])
@pytest.mark.parametrize(
    "path",
    ["/api/chat-admin/agent", "/api/chat-admin/users/search", "/api/chat/user/prefs", "/api/chat/feedback"],
)
def test_json_nested_ten_thousand_deep_is_a_400_naming_the_body(admin_client, path, body):
    response = admin_client.post(path, body, content_type="application/json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="body")
    assert "nested" in response.json()["error"]


@pytest.mark.django_db(transaction=True)
async def test_json_nested_ten_thousand_deep_to_converse_is_a_400():
    client = AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    response = await client.post("/api/chat/converse", DEEP.encode())
    assert_error(response, 400, "INVALID_REQUEST", mentions="nested")


def test_json_nested_within_the_limit_is_validated_as_usual(admin_client):
    body = '{"prefs": ' + '{"a":' * 40 + "1" + "}" * 40 + "}"
    assert admin_client.post("/api/chat/user/prefs", body, content_type="application/json").status_code == 200


@pytest.mark.parametrize("path", ["/api/chat-admin/agent", "/api/chat/user/prefs"])
def test_a_five_megabyte_body_is_a_413_envelope(admin_client, path):
    response = admin_client.post(path, FIVE_MB, content_type="application/json")
    assert_error(response, 413, "PAYLOAD_TOO_LARGE", mentions="bytes")


@pytest.mark.django_db(transaction=True)
async def test_a_five_megabyte_body_to_converse_is_a_413_envelope():
    client = AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    response = await client.post("/api/chat/converse", FIVE_MB.encode(), headers={"accept": "text/event-stream"})
    assert_error(response, 413, "PAYLOAD_TOO_LARGE", mentions="bytes")


@pytest.mark.django_db(transaction=True)
async def test_a_websocket_message_too_deep_or_too_large_is_an_error_frame_and_the_socket_stays_open():
    socket = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await socket.connect())[0]
    await socket.send_to(text_data=DEEP_OBJECT)
    deep = await socket.receive_json_from(timeout=10)
    await socket.send_to(text_data=FIVE_MB)
    large = await socket.receive_json_from(timeout=10)
    await socket.send_to(text_data="{}")
    still_open = await socket.receive_json_from(timeout=10)
    await socket.disconnect()

    assert deep["type"] == "error" and deep["code"] == "INVALID_REQUEST" and "nested" in deep["error"]
    assert large["type"] == "error" and large["code"] == "PAYLOAD_TOO_LARGE"
    assert still_open["type"] == "error" and "chatAppId" in still_open["error"]


def test_a_multipart_upload_over_its_limit_is_a_413_with_its_code(user_client, admin_client, settings):
    """Every 413 says PAYLOAD_TOO_LARGE, whichever check refused the body."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.CHAT_UPLOAD_MAX_BYTES = 10
    settings.CHAT_KB_MAX_DOCUMENT_BYTES = 10
    big = b"x" * (100 * 1024)  # past the limit and the multipart framing's allowance: refused unread
    response = user_client.post("/api/chat/files", {"chatAppId": "any", "file": SimpleUploadedFile("a.txt", big, "text/plain")})
    assert_error(response, 413, "PAYLOAD_TOO_LARGE", mentions="file")
    admin_client.post(
        "/api/chat-admin/knowledge-base", {"knowledgeBase": {"knowledgeBaseId": "kb", "name": "KB", "description": "d"}}, format="json"
    )
    response = admin_client.post("/api/chat-admin/knowledge-base/kb/documents", {"file": SimpleUploadedFile("a.txt", big, "text/plain")})
    assert_error(response, 413, "PAYLOAD_TOO_LARGE")
