"""The audit log (docs/decisions.md): every admin write, through the Admin API or the Django admin, is
recorded with actor, time, object, action and the change; secrets never appear in it."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from chat.users.models import ChatUser
from chatplatform.models import AuditEntry
from tests.conftest import assert_ok
from tests.factories import tool_payload

pytestmark = pytest.mark.django_db

SECRET = "audit-never-shows-this-4471"
ACTOR = "root-admin"  # admin_client's user


def entries(object_type: str, object_id: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(object_type=object_type, object_id=object_id).order_by("at", "id"))


def no_secret_anywhere() -> None:
    for entry in AuditEntry.objects.all():
        assert SECRET not in json.dumps(entry.changes) + entry.object_repr


def test_agent_create_update_and_delete_through_the_admin_api_are_recorded(admin_client):
    assert_ok(
        admin_client.post("/api/chat-admin/agent", {"agent": {"agentId": "helper", "basePrompt": "Hi.", "toolIds": []}}, format="json")
    )
    assert_ok(
        admin_client.post("/api/chat-admin/agent", {"agent": {"agentId": "helper", "basePrompt": "Hello.", "toolIds": []}}, format="json")
    )
    assert_ok(
        admin_client.post("/api/chat-admin/agent", {"agent": {"agentId": "helper", "basePrompt": "Hello.", "toolIds": []}}, format="json")
    )
    assert_ok(admin_client.delete("/api/chat-admin/agent/helper"))

    created, updated, deleted = entries("agent", "helper")  # the unchanged save records nothing
    assert [e.action for e in (created, updated, deleted)] == ["create", "update", "delete"]
    assert {e.actor for e in (created, updated, deleted)} == {ACTOR}
    assert created.changes["base_prompt"] == {"before": None, "after": "Hi."}
    assert updated.changes == {"base_prompt": {"before": "Hi.", "after": "Hello."}}
    assert deleted.changes["base_prompt"] == {"before": "Hello.", "after": None}
    assert created.at <= updated.at <= deleted.at


def test_a_tools_auth_secret_is_redacted_and_its_change_is_still_visible(admin_client):
    auth = {"clientId": "platform", "clientSecret": SECRET, "tokenUrl": "https://id.example.com/token"}
    assert_ok(admin_client.post("/api/chat-admin/tool", {"tool": tool_payload("mcp", auth=auth)}, format="json"))
    changed = {**auth, "clientSecret": SECRET + "-rotated"}
    assert_ok(admin_client.post("/api/chat-admin/tool", {"tool": {"toolId": "weather@1", "auth": changed}}, format="json"))
    assert_ok(admin_client.delete("/api/chat-admin/tool/weather@1"))

    created, rotated, deleted = entries("tool definition", "weather@1")
    assert created.changes["auth"]["after"] == {"clientId": "platform", "clientSecret": "[redacted]", "tokenUrl": auth["tokenUrl"]}
    assert rotated.changes == {"auth": {"before": created.changes["auth"]["after"], "after": "[redacted] (changed)"}}
    assert deleted.action == "delete"
    no_secret_anywhere()


def test_tag_definition_writes_are_recorded(admin_client):
    definition = {
        "scope": "demo",
        "tag": "chart",
        "status": "enabled",
        "usageMode": "global",
        "widget": {"type": "built-in", "builtInType": "chart"},
        "renderingContexts": {"inline": True},
        "canBeGeneratedByLlm": False,
        "canBeGeneratedByTool": True,
        "description": "Charts",
    }
    assert_ok(admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": definition}, format="json"))
    assert_ok(admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": {**definition, "description": "Charts!"}}, format="json"))
    assert_ok(admin_client.delete("/api/chat-admin/tagdef", {"tagDefinition": {"scope": "demo", "tag": "chart"}}, format="json"))

    rows = list(AuditEntry.objects.filter(object_type="tag definition").order_by("id"))
    assert [row.action for row in rows] == ["create", "update", "delete"]
    assert rows[1].changes == {"description": {"before": "Charts", "after": "Charts!"}}
    assert {row.object_repr for row in rows} == {rows[0].object_repr} and "chart" in rows[0].object_repr


def test_semantic_directive_writes_are_recorded(admin_client):
    directive = {
        "scopeType": "chatapp",
        "scopeValue": "support",
        "id": "french",
        "description": "French",
        "instructions": "Answer in French.",
    }
    assert_ok(admin_client.post("/api/chat-admin/semantic-directive", {"semanticDirective": directive}, format="json"))
    key = {"scope": "chatapp#support", "id": "french"}
    assert_ok(admin_client.delete("/api/chat-admin/semantic-directive", {"semanticDirective": key}, format="json"))

    rows = list(AuditEntry.objects.filter(object_type="semantic directive").order_by("id"))
    assert [(row.action, row.actor) for row in rows] == [("create", ACTOR), ("delete", ACTOR)]
    assert rows[0].changes["instructions"]["after"] == "Answer in French."


def test_chat_app_writes_are_recorded(admin_client):
    assert_ok(
        admin_client.post("/api/chat-admin/agent", {"agent": {"agentId": "helper", "basePrompt": "Hi.", "toolIds": []}}, format="json")
    )
    app = {"chatAppId": "support", "title": "Support", "agentId": "helper"}
    assert_ok(admin_client.post("/api/chat-admin/chat-app", {"chatApp": app, "userId": ACTOR}, format="json"))
    assert_ok(admin_client.post("/api/chat-admin/chat-app", {"chatApp": {**app, "title": "Help desk"}, "userId": ACTOR}, format="json"))
    assert_ok(admin_client.delete("/api/chat-admin/chat-app/support"))

    created, updated, deleted = entries("chat app", "support")
    assert (created.action, updated.action, deleted.action) == ("create", "update", "delete")
    assert updated.changes["title"] == {"before": "Support", "after": "Help desk"}
    assert deleted.actor == ACTOR


def test_knowledge_base_and_document_writes_are_recorded(admin_client):
    base = {"knowledgeBaseId": "handbook", "name": "Handbook", "description": "The staff handbook."}
    assert_ok(admin_client.post("/api/chat-admin/knowledge-base", {"knowledgeBase": base}, format="json"))
    document = assert_ok(
        admin_client.post(
            "/api/chat-admin/knowledge-base/handbook/documents", {"document": {"title": "Leave", "text": "Ten days a year."}}, format="json"
        )
    )["document"]
    assert_ok(admin_client.delete(f"/api/chat-admin/knowledge-base/handbook/documents/{document['documentId']}"))
    assert_ok(admin_client.delete("/api/chat-admin/knowledge-base/handbook"))

    assert [e.action for e in entries("knowledge base", "handbook")] == ["create", "delete"]
    documents = list(AuditEntry.objects.filter(object_type="document").order_by("id"))
    assert [row.action for row in documents] == ["create", "delete"]
    assert documents[0].changes["title"]["after"] == "Leave"
    assert "content" not in documents[0].changes


def test_a_django_admin_save_is_recorded_with_the_staff_user_and_shown_read_only_in_the_admin():
    staff = Client()
    staff.force_login(ChatUser.objects.create_superuser("operator"))
    form = {
        "agent_id": "helper",
        "base_prompt": "You help.",
        "foundation_model": "",
        "verification_foundation_model": "",
        "access_rules": "null",
        "rollout_policy": "null",
        "collaborators": "null",
        "agent_collaboration": "null",
        "knowledge_bases": "null",
        "custom": '{"team": "x", "password": "' + SECRET + '"}',
        "runtime_adapter": "",
        "test_type": "",
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
        "versions-MIN_NUM_FORMS": "0",
        "versions-MAX_NUM_FORMS": "0",
    }
    assert staff.post("/admin/agents/agentdefinition/add/", form).status_code == 302

    (entry,) = entries("agent", "helper")
    assert (entry.actor, entry.action) == ("operator", "create")
    assert entry.changes["custom"]["after"] == {"team": "x", "password": "[redacted]"}
    no_secret_anywhere()

    listing = staff.get("/admin/chatplatform/auditentry/?action__exact=create&object_type=agent")
    assert listing.status_code == 200
    assert "helper" in listing.content.decode()
    page = staff.get(f"/admin/chatplatform/auditentry/{entry.pk}/change/")
    assert page.status_code == 200
    assert "You help." in page.content.decode()
    assert SECRET not in page.content.decode()
    assert staff.get("/admin/chatplatform/auditentry/add/").status_code == 403
    assert staff.post(f"/admin/chatplatform/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


def test_a_django_admin_delete_goes_through_the_service_and_is_recorded(admin_client):
    assert_ok(
        admin_client.post("/api/chat-admin/agent", {"agent": {"agentId": "helper", "basePrompt": "Hi.", "toolIds": []}}, format="json")
    )
    staff = Client()
    staff.force_login(ChatUser.objects.create_superuser("operator"))
    assert staff.post("/admin/agents/agentdefinition/helper/delete/", {"post": "yes"}).status_code == 302

    assert [(e.action, e.actor) for e in entries("agent", "helper")] == [("create", ACTOR), ("delete", "operator")]
