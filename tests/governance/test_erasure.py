"""Erasure (docs/data.md, "Where it is, and what reaches it"): `DELETE /api/chat-admin/users/{userId}` deletes a user and
everything of theirs. Afterwards no table holds a value naming the user id, the file storage holds
none of their files, and their open browser session is refused at its next request."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from chat.models import ChatSession, ToolApproval, WebhookDelivery
from chatplatform.models import AuditEntry
from tests.conftest import assert_error, bearer_token
from tests.converse.helpers import converse
from tests.factories import ChatAppFactory
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

ERIN = "erin-7f3a91"  # an id no other value contains by chance
BOB = "bob-c4d2e8"
UPLOADS = {"fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/plain"]}}


@pytest.fixture(autouse=True)
def _platform(settings, openai_server, transactional_db) -> None:
    settings.CHAT_SITE_FEATURES = {}
    settings.CHAT_TITLE_MODEL = "offline"
    settings.OPENAI_BASE_URL = openai_server.base_url
    # Deliveries stay pending: no worker runs here, and their bodies name the user.
    settings.CHAT_WEBHOOKS = [{"url": "http://127.0.0.1:9/hook", "secret": "s", "events": ["session.created", "feedback.created"]}]
    openai_server.script(lambda request: Reply(text="Here you are."))
    ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="openai:test-model", features=UPLOADS)


async def a_person_with_everything(client_for: Any, user_id: str) -> dict[str, Any]:
    """Sessions with messages and an attached file, feedback, prefs, widget data and usage, through the API."""
    client = client_for(user_id)
    notes = SimpleUploadedFile("notes.txt", b"private notes\n", content_type="text/plain")
    upload = encode_multipart(BOUNDARY, {"chatAppId": "support", "file": notes})
    file = (await client.post("/api/chat/files", upload, content_type=MULTIPART_CONTENT)).json()["file"]
    first = (await converse(client, files=[{"fileId": file["fileId"]}])).json()
    await converse(client, sessionId=first["sessionId"], message="And another thing")
    second = (await converse(client, message="A second conversation")).json()
    feedback = {"sessionId": second["sessionId"], "type": "user_thumbs_up", "userComment": "good"}
    assert (await client.post("/api/chat/feedback", {"feedback": feedback})).status_code == 200
    assert (await client.post("/api/chat/user/prefs", {"prefs": {"theme": "dark"}})).status_code == 200
    assert (await client.post("/api/chat/widget-data/demo/counter", {"data": {"count": 3}})).status_code == 200
    return {"file": file, "sessions": [first["sessionId"], second["sessionId"]]}


def rows_naming(value: str) -> dict[str, int]:
    """Every table of every model, every column read as text: the rows holding `value`, per table."""
    found = {}
    tables = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        for model in apps.get_models(include_auto_created=True):
            if not model._meta.managed and model._meta.db_table not in tables:
                continue  # a model with no table of its own (django-rq's dashboard, with REDIS_URL)
            table = connection.ops.quote_name(model._meta.db_table)
            columns = [connection.ops.quote_name(field.column) for field in model._meta.concrete_fields]
            where = " OR ".join(f"CAST({column} AS TEXT) LIKE %s" for column in columns)
            cursor.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", [f"%{value}%"] * len(columns))
            count = cursor.fetchone()[0]
            if count:
                found[model._meta.db_table] = count
    return found


def signed_in_browser(user_id: str) -> Client:
    """A browser holding the `session` cookie of `user_id` (the token-to-cookie exchange)."""
    browser = Client()
    response = browser.post("/api/chat/auth/session", HTTP_AUTHORIZATION=f"Bearer {bearer_token(user_id)}")
    assert response.status_code == 200, response.content
    assert browser.get("/api/chat/sessions").status_code == 200
    return browser


async def test_after_erasure_no_table_and_no_stored_file_names_the_user_and_their_browser_is_signed_out(
    async_client_for, client_for, chat_files
):
    erin = await a_person_with_everything(async_client_for, ERIN)
    await a_person_with_everything(async_client_for, BOB)
    session = await ChatSession.objects.aget(pk=erin["sessions"][0])
    await ToolApproval.objects.acreate(
        session=session, message_id=session.last_message_id, call_id="c1", tool_id="t", function="f", expires_at=session.create_date
    )
    browser = await sync_to_async(signed_in_browser)(ERIN)
    before = await sync_to_async(rows_naming)(ERIN)
    assert {"chat_chatsession", "chat_chatmessage", "chat_chatfile", "chat_chatuser", "chat_widgetdata", "chat_usagecounter"} <= set(before)
    assert await WebhookDelivery.objects.filter(session_id__in=erin["sessions"]).aexists()
    stored_files = {path.name for path in chat_files.iterdir()}
    assert len(stored_files) == 2

    response = await async_client_for("root-admin", admin=True).request("DELETE", f"/api/chat-admin/users/{ERIN}")

    assert response.status_code == 200, response.json()
    erased = response.json()["erased"]
    assert response.json()["success"] is True
    assert erased["sessions"] == 2 and erased["messages"] == 6 and erased["files"] == 1 and erased["feedback"] == 1
    assert erased["widgetData"] == 1 and erased["prefs"] == 1 and erased["usageCounters"] == 4 and erased["approvals"] == 1
    assert erased["browserSessions"] == 1 and erased["webhookDeliveries"] >= 3
    assert await sync_to_async(rows_naming)(ERIN) == {}
    remaining_files = {path.name for path in chat_files.iterdir()}
    assert len(remaining_files) == 1 and remaining_files < stored_files  # bob's file only
    assert "chat_chatsession" in await sync_to_async(rows_naming)(BOB)  # the other user is untouched
    # Their browser session ended: the cookie is refused at its next request.
    refused = await sync_to_async(browser.get)("/api/chat/sessions")
    assert_error(refused, 401, "AUTHENTICATION_REQUIRED")
    # The audit names them only by the hash of their id.
    entry = await AuditEntry.objects.filter(object_type="erased user").aget()
    assert entry.actor == "root-admin" and entry.object_id.startswith("sha256:") and ERIN not in str(entry.changes)


async def test_a_token_for_an_erased_user_starts_a_new_empty_user(async_client_for):
    await a_person_with_everything(async_client_for, ERIN)
    admin = async_client_for("root-admin", admin=True)
    assert (await admin.request("DELETE", f"/api/chat-admin/users/{ERIN}")).status_code == 200

    again = async_client_for(ERIN)
    user = (await again.request("GET", "/api/chat/user")).json()["user"]
    assert user["userId"] == ERIN
    assert (await again.request("GET", "/api/chat/user/prefs")).json()["prefs"] == {}
    assert (await again.request("GET", "/api/chat/sessions")).json()["sessions"] == []
    assert_error(await admin.request("DELETE", "/api/chat-admin/users/nobody"), 404, "NOT_FOUND")
    assert_error(await again.request("DELETE", f"/api/chat-admin/users/{ERIN}"), 403, "INSUFFICIENT_PERMISSIONS")
