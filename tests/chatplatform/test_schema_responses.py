"""The OpenAPI document says what each endpoint answers: every key of a real answer is documented
in its response schema, and every key the schema requires is in the answer (docs/api.md, "Envelope").

The records are created through the API (and factories for what only a turn creates), then each
endpoint is called over HTTP and its JSON walked against the 200 schema of its path and method.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chat.approvals.models import ToolApproval
from chat.insights.models import SessionInsight
from chat.users.models import ChatUser
from tests.factories import ChatMessageFactory, ChatSessionFactory, tag_payload, tool_payload

pytestmark = pytest.mark.django_db


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        node = {**schema["components"]["schemas"][name], **{k: v for k, v in node.items() if k != "$ref"}}
    if "allOf" in node:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for part in node["allOf"]:
            part = _resolve(schema, part)
            merged.setdefault("properties", {}).update(part.get("properties", {}))
            merged["required"] = [*merged.get("required", []), *part.get("required", [])]
            merged.update({k: v for k, v in part.items() if k not in ("properties", "required")})
        node = merged
    return node


def mismatches(schema: dict[str, Any], node: dict[str, Any], value: Any, where: str) -> list[str]:
    """Where `value` has a key its schema does not document, or lacks one the schema requires."""
    node = _resolve(schema, node)
    for branches in ("oneOf", "anyOf"):
        if branches in node and value is not None:
            found = [mismatches(schema, branch, value, where) for branch in node[branches]]
            return [] if any(not problems for problems in found) else min(found, key=len)
    if isinstance(value, dict) and "properties" in node:
        documented = set(node["properties"])
        problems = [f"{where}.{key}: in the answer, not in the schema" for key in sorted(set(value) - documented)]
        if node.get("additionalProperties"):
            problems = []
        problems += [f"{where}.{key}: required by the schema, not in the answer" for key in node.get("required", []) if key not in value]
        for key in sorted(set(value) & documented):
            problems += mismatches(schema, node["properties"][key], value[key], f"{where}.{key}")
        return problems
    if isinstance(value, list) and "items" in node:
        return [problem for index, item in enumerate(value[:3]) for problem in mismatches(schema, node["items"], item, f"{where}[{index}]")]
    return []


def check_answers(schema: dict[str, Any], calls: list[tuple[Any, str, str, str, Any]]) -> list[str]:
    """Each call is (client, method, documented path, path, body); the problems of all of them."""
    problems = []
    for client, method, documented, path, body in calls:
        response = getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)
        assert response.status_code == 200, f"{method.upper()} {path}: {response.status_code} {response.content[:300]!r}"
        documented_answer = schema["paths"][documented][method]["responses"].get(str(response.status_code), {})
        if "content" not in documented_answer:
            problems.append(f"{method.upper()} {documented}: answers {response.status_code}, which the schema does not document")
            continue
        answer_schema = documented_answer["content"]["application/json"]["schema"]
        problems += mismatches(schema, answer_schema, response.json(), f"{method.upper()} {documented}")
    return problems


@pytest.fixture
def schema(anon_client: Any) -> dict[str, Any]:
    return anon_client.get("/api/schema/?format=json").json()


@pytest.fixture
def records(admin_client: Any) -> dict[str, Any]:
    """An agent with a tool, a chat app, a tag definition, a directive, a knowledge base with a document."""
    ChatUser.objects.create_user("alice")

    def post(path: str, body: dict[str, Any]) -> None:
        response = admin_client.post(path, body, format="json")
        assert response.status_code == 200, response.content

    post("/api/chat-admin/tool", {"tool": tool_payload()})
    agent = {"agentId": "helper", "basePrompt": "You help.", "toolIds": ["weather@1"]}
    post("/api/chat-admin/agent", {"agent": agent})
    post("/api/chat-admin/agent", {"agent": {**agent, "basePrompt": "You help, briefly."}})
    post("/api/chat-admin/chat-app", {"chatApp": {"chatAppId": "support", "title": "Support", "agentId": "helper"}})
    post("/api/chat-admin/knowledge-base", {"knowledgeBase": {"knowledgeBaseId": "handbook", "name": "Handbook", "description": "Staff."}})
    session = ChatSessionFactory(user_id="alice", chat_app_id="support", agent_id="helper")
    ChatMessageFactory(session=session, source="assistant", message="Hello")
    SessionInsight.objects.create(session=session)
    return {"session": str(session.pk)}


def test_every_admin_answer_has_the_keys_its_schema_documents(schema, admin_client, records):
    session = records["session"]
    calls = [
        (admin_client, "post", "/api/chat-admin/tool", "/api/chat-admin/tool", {"tool": {**tool_payload(), "description": "Weather, now"}}),
        (admin_client, "get", "/api/chat-admin/tool/{tool_id}", "/api/chat-admin/tool/weather@1", None),
        (admin_client, "post", "/api/chat-admin/tools/search", "/api/chat-admin/tools/search", {}),
        (admin_client, "get", "/api/chat-admin/agent/{agentId}", "/api/chat-admin/agent/helper", None),
        (admin_client, "get", "/api/chat-admin/agent/{agentId}/versions", "/api/chat-admin/agent/helper/versions", None),
        (admin_client, "get", "/api/chat-admin/agent/{agentId}/versions/{version}", "/api/chat-admin/agent/helper/versions/1", None),
        (admin_client, "post", "/api/chat-admin/agents/search", "/api/chat-admin/agents/search", {}),
        (admin_client, "post", "/api/chat-admin/agent/{agentId}/rollback", "/api/chat-admin/agent/helper/rollback", {"version": 1}),
        (admin_client, "get", "/api/chat-admin/chat-app/{chatAppId}", "/api/chat-admin/chat-app/support", None),
        (admin_client, "post", "/api/chat-admin/chat-apps/search", "/api/chat-admin/chat-apps/search", {}),
        (admin_client, "post", "/api/chat-admin/tagdef", "/api/chat-admin/tagdef", {"tagDefinition": tag_payload()}),
        (admin_client, "post", "/api/chat-admin/tagdef/search", "/api/chat-admin/tagdef/search", {"includeInstructions": True}),
        (admin_client, "post", "/api/chat-admin/tagdef/search", "/api/chat-admin/tagdef/search", {}),
        (admin_client, "post", "/api/chat-admin/tagdef/clear-cache", "/api/chat-admin/tagdef/clear-cache", {}),
        (
            admin_client,
            "post",
            "/api/chat-admin/semantic-directive",
            "/api/chat-admin/semantic-directive",
            {"semanticDirective": {"scope": "chatapp#support", "id": "refunds", "description": "refunds", "instructions": "Five days."}},
        ),
        (admin_client, "post", "/api/chat-admin/semantic-directive/search", "/api/chat-admin/semantic-directive/search", {}),
        (
            admin_client,
            "post",
            "/api/chat-admin/semantic-directive/search",
            "/api/chat-admin/semantic-directive/search",
            {"includeInstructions": True},
        ),
        (admin_client, "get", "/api/chat-admin/knowledge-base/{knowledgeBaseId}", "/api/chat-admin/knowledge-base/handbook", None),
        (admin_client, "post", "/api/chat-admin/knowledge-bases/search", "/api/chat-admin/knowledge-bases/search", {}),
        (
            admin_client,
            "post",
            "/api/chat-admin/knowledge-base/{knowledgeBaseId}/documents",
            "/api/chat-admin/knowledge-base/handbook/documents",
            {"document": {"title": "Refunds", "text": "Refunds take five days."}},
        ),
        (
            admin_client,
            "get",
            "/api/chat-admin/knowledge-base/{knowledgeBaseId}/documents",
            "/api/chat-admin/knowledge-base/handbook/documents",
            None,
        ),
        (admin_client, "post", "/api/chat-admin/users/search", "/api/chat-admin/users/search", {}),
        (admin_client, "get", "/api/chat-admin/users/{userId}/export", "/api/chat-admin/users/alice/export", None),
        (
            admin_client,
            "post",
            "/api/chat-admin/sessions/search",
            "/api/chat-admin/sessions/search",
            {"command": "sessionSearch", "search": {}},
        ),
        (
            admin_client,
            "post",
            "/api/chat-admin/sessions/search",
            "/api/chat-admin/sessions/search",
            {"command": "sessionSearch", "search": {"includeInsights": True, "includeFeedback": True}},
        ),
        (admin_client, "get", "/api/chat-admin/sessions/{sessionId}/messages", f"/api/chat-admin/sessions/{session}/messages", None),
        (admin_client, "get", "/api/chat-admin/sessions/{sessionId}/insights", f"/api/chat-admin/sessions/{session}/insights", None),
        (
            admin_client,
            "post",
            "/api/chat-admin/feedback",
            "/api/chat-admin/feedback",
            {
                "command": "addChatSessionFeedback",
                "feedback": {"sessionId": session, "type": "other", "internalComments": [{"comment": "Looked at it."}]},
            },
        ),
        (admin_client, "get", "/api/chat-admin/config", "/api/chat-admin/config", None),
        (
            admin_client,
            "post",
            "/api/chat-admin/knowledge-base/{knowledgeBaseId}/query",
            "/api/chat-admin/knowledge-base/handbook/query",
            {"query": "refunds"},
        ),
    ]
    problems = check_answers(schema, calls)
    assert not problems, "\n".join(problems)


def test_every_chat_answer_has_the_keys_its_schema_documents(schema, client_for, records):
    alice = client_for("alice")
    session = records["session"]
    share = alice.post(f"/api/chat/sessions/{session}/share", {}, format="json")
    assert share.status_code == 200, share.content
    share_id = share.json()["shareId"]
    calls = [
        (alice, "get", "/api/chat/user", "/api/chat/user", None),
        (alice, "post", "/api/chat/user/prefs", "/api/chat/user/prefs", {"prefs": {"theme": "dark"}}),
        (alice, "get", "/api/chat/user/prefs", "/api/chat/user/prefs", None),
        (alice, "get", "/api/chat/user/usage", "/api/chat/user/usage", None),
        (alice, "get", "/api/chat/user/export", "/api/chat/user/export", None),
        (alice, "get", "/api/chat/chat-apps", "/api/chat/chat-apps", None),
        (alice, "get", "/api/chat/sessions", "/api/chat/sessions", None),
        (alice, "get", "/api/chat/sessions/{sessionId}/messages", f"/api/chat/sessions/{session}/messages", None),
        (alice, "post", "/api/chat/sessions/{sessionId}/title", f"/api/chat/sessions/{session}/title", {"title": "Refunds"}),
        (alice, "post", "/api/chat/sessions/{sessionId}/pin", f"/api/chat/sessions/{session}/pin", {}),
        (alice, "post", "/api/chat/feedback", "/api/chat/feedback", {"feedback": {"sessionId": session, "type": "other"}}),
        (alice, "get", "/api/chat/sessions/{sessionId}/feedback", f"/api/chat/sessions/{session}/feedback", None),
        (alice, "get", "/api/chat/sessions/search", "/api/chat/sessions/search?q=Hello", None),
        (alice, "post", "/api/chat/tagdef/search", "/api/chat/tagdef/search", {}),
        (alice, "post", "/api/chat/widget-data/{scope}/{tag}", "/api/chat/widget-data/demo/counter", {"data": {"count": 3}}),
        (alice, "get", "/api/chat/widget-data/{scope}/{tag}", "/api/chat/widget-data/demo/counter", None),
        (alice, "post", "/api/chat/sessions/{sessionId}/share", f"/api/chat/sessions/{session}/share", {}),
        (alice, "get", "/api/chat/shared/{shareId}", f"/api/chat/shared/{share_id}", None),
        (alice, "get", "/api/chat/user/export", "/api/chat/user/export", None),  # now with widget data
    ]
    problems = check_answers(schema, calls)
    assert not problems, "\n".join(problems)


# The door views read on the database threads: their records must be committed to be seen.
@pytest.mark.django_db(transaction=True)
def test_every_door_answer_has_the_keys_its_schema_documents(schema, client_for):
    ChatUser.objects.create_user("alice")
    session = ChatSessionFactory(user_id="alice")
    answer = ChatMessageFactory(session=session, source="assistant", message="May I look up the weather?")
    ToolApproval.objects.create(
        session=session,
        message_id=answer.pk,
        call_id="call-1",
        tool_id="weather@1",
        function="weather",
        arguments={"city": "Lyon"},
        expires_at=timezone.now() + timedelta(hours=1),
    )
    alice = client_for("alice")
    approvals = f"/api/chat/sessions/{session.pk}/approvals"
    assert [item["function"] for item in alice.get(approvals).json()["approvals"]] == ["weather"]  # an item to walk
    problems = check_answers(schema, [(alice, "get", "/api/chat/sessions/{sessionId}/approvals", approvals, None)])
    assert not problems, "\n".join(problems)
