"""A person's data: `GET /api/chat/user/export` lists what the Chat API lists for them, and
`GET /api/chat-admin/users/{userId}/export` the same for an operator; `DELETE
/api/chat/sessions/{sessionId}` deletes one conversation with its files' bytes (docs/api.md, "Your data")."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from chat.models import ChatMessage
from tests.conftest import assert_error
from tests.converse.helpers import converse
from tests.factories import ChatAppFactory
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _platform(settings, openai_server, transactional_db) -> None:
    settings.CHAT_SITE_FEATURES = {}
    settings.CHAT_TITLE_MODEL = "offline"
    settings.OPENAI_BASE_URL = openai_server.base_url
    openai_server.script(lambda request: Reply(text="Noted."))
    uploads = {"fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/plain"]}}
    ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="openai:test-model", features=uploads)


async def get(client: Any, path: str) -> Any:
    response = await client.request("GET", path)
    assert response.status_code == 200, response.json()
    return response.json()


async def upload(client: Any, name: str) -> dict[str, Any]:
    form = encode_multipart(BOUNDARY, {"chatAppId": "support", "file": SimpleUploadedFile(name, b"text\n", content_type="text/plain")})
    return (await client.post("/api/chat/files", form, content_type=MULTIPART_CONTENT)).json()["file"]


async def test_the_export_lists_what_the_chat_api_lists_for_the_user(async_client_for):
    alice = async_client_for("alice")
    file = await upload(alice, "notes.txt")
    first = (await converse(alice, files=[{"fileId": file["fileId"]}])).json()
    await converse(alice, sessionId=first["sessionId"], message="More")
    await converse(alice, message="Another conversation")
    feedback = {"sessionId": first["sessionId"], "type": "user_thumbs_down", "userComment": "too short"}
    await alice.post("/api/chat/feedback", {"feedback": feedback})
    await alice.post("/api/chat/user/prefs", {"prefs": {"language": "fr"}})
    await alice.post("/api/chat/widget-data/demo/counter", {"data": {"count": 7}})
    await converse(async_client_for("bob"), message="Not alice's")

    export = (await get(alice, "/api/chat/user/export"))["export"]

    listed = (await get(alice, "/api/chat/sessions?limit=100"))["sessions"]
    assert [{key: value for key, value in session.items() if key != "messages"} for session in export["sessions"]] == listed
    assert len(listed) == 2
    for session in export["sessions"]:
        messages = (await get(alice, f"/api/chat/sessions/{session['sessionId']}/messages?limit=1000"))["messages"]
        assert session["messages"] == messages
    assert sum(len(session["messages"]) for session in export["sessions"]) == 6
    feedback_listed = [
        item for session in listed for item in (await get(alice, f"/api/chat/sessions/{session['sessionId']}/feedback"))["feedback"]
    ]
    assert export["feedback"] == feedback_listed and len(feedback_listed) == 1
    assert export["user"] == (await get(alice, "/api/chat/user"))["user"]
    assert export["prefs"] == (await get(alice, "/api/chat/user/prefs"))["prefs"] == {"language": "fr"}
    assert [(item["scope"], item["tag"], item["data"]) for item in export["widgetData"]] == [("demo", "counter", {"count": 7})]
    assert (await get(alice, "/api/chat/widget-data/demo/counter"))["data"] == {"count": 7}
    assert [{key: item[key] for key in file} for item in export["files"]] == [
        (await get(alice, f"/api/chat/files/{file['fileId']}"))["file"]
    ]
    # An operator's export of her is the same document; another user may not read it.
    admin = async_client_for("root-admin", admin=True)
    assert (await get(admin, "/api/chat-admin/users/alice/export"))["export"] == export
    assert_error(await admin.request("GET", "/api/chat-admin/users/nobody/export"), 404, "NOT_FOUND")
    assert_error(await async_client_for("bob").request("GET", "/api/chat/user/export?userId=alice"), 403, "INSUFFICIENT_PERMISSIONS")


async def test_a_user_deletes_a_conversation_with_its_files_and_no_one_else_can(async_client_for, chat_files):
    alice = async_client_for("alice")
    file = await upload(alice, "notes.txt")
    doomed = (await converse(alice, files=[{"fileId": file["fileId"]}])).json()["sessionId"]
    kept = (await converse(alice, message="Keep this one")).json()["sessionId"]
    assert len(list(chat_files.iterdir())) == 1

    assert_error(await async_client_for("bob").request("DELETE", f"/api/chat/sessions/{doomed}"), 404, "INVALID_SESSION_ID")
    response = await alice.request("DELETE", f"/api/chat/sessions/{doomed}")

    assert response.status_code == 200 and response.json() == {"success": True}
    assert [session["sessionId"] for session in (await get(alice, "/api/chat/sessions"))["sessions"]] == [kept]
    assert_error(await alice.request("GET", f"/api/chat/sessions/{doomed}/messages"), 404, "INVALID_SESSION_ID")
    assert not await ChatMessage.objects.filter(session_id=doomed).aexists()
    assert list(chat_files.iterdir()) == []  # the attached file's bytes went with it
    assert_error(await alice.request("GET", f"/api/chat/files/{file['fileId']}"), 404, "NOT_FOUND")
    assert_error(await alice.request("DELETE", f"/api/chat/sessions/{doomed}"), 404, "INVALID_SESSION_ID")
