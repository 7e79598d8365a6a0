"""Helpers of the configuration tests: one definition of every kind, written through their own Admin API
endpoints, and the configuration endpoints as a client calls them."""

from __future__ import annotations

import copy
from typing import Any

from rest_framework.test import APIClient

from chatplatform.models import AuditEntry
from tests.factories import function, tag_payload, tool_payload

SECRET = "client-secret-4f1a"
AUTH = {"clientId": "weather-client", "clientSecret": SECRET, "tokenUrl": "https://id.example.com/oauth/token"}
KINDS = ("tools", "knowledgeBases", "agents", "tagDefinitions", "semanticDirectives", "chatApps")


def admin_post(client: APIClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def populate(client: APIClient) -> None:
    """One definition of every kind, written through their own Admin API endpoints, with references between them."""
    admin_post(client, "/api/chat-admin/tool", {"tool": tool_payload("inline")})
    admin_post(
        client,
        "/api/chat-admin/tool",
        {"tool": tool_payload("mcp", toolId="forecast@2", name="forecast", functionSchema=[function("forecast")], auth=AUTH)},
    )
    admin_post(
        client,
        "/api/chat-admin/knowledge-base",
        {"knowledgeBase": {"knowledgeBaseId": "handbook", "name": "Handbook", "description": "Company policies"}},
    )
    admin_post(client, "/api/chat-admin/agent", {"agent": {"agentId": "researcher", "basePrompt": "You research.", "toolIds": []}})
    admin_post(
        client,
        "/api/chat-admin/agent",
        {
            "agent": {
                "agentId": "helper",
                "basePrompt": "You help {{user.firstName}}.",
                "toolIds": ["weather@1"],
                "knowledgeBases": [{"id": "handbook"}],
                "collaborators": [{"agentId": "researcher", "instruction": "Ask for research", "historyRelay": "TO_AGENT"}],
            }
        },
    )
    admin_post(client, "/api/chat-admin/tagdef", {"tagDefinition": tag_payload()})
    admin_post(
        client,
        "/api/chat-admin/semantic-directive",
        {
            "semanticDirective": {
                "scope": "agent#helper",
                "id": "answer-in-french",
                "description": "French",
                "instructions": "Answer in French.",
            }
        },
    )
    admin_post(client, "/api/chat-admin/chat-app", {"chatApp": {"chatAppId": "support", "title": "Support", "agentId": "helper"}})


def export(client: APIClient) -> dict[str, Any]:
    return export_body(client)["config"]


def export_body(client: APIClient) -> dict[str, Any]:
    response = client.get("/api/chat-admin/config")
    assert response.status_code == 200, response.json()
    return response.json()


def apply(client: APIClient, config: dict[str, Any], **options: Any) -> Any:
    return client.post("/api/chat-admin/config/apply", {"config": config, "userId": "deployer", **options}, format="json")


def applied(client: APIClient, config: dict[str, Any], **options: Any) -> list[dict[str, str]]:
    response = apply(client, config, **options)
    assert response.status_code == 200, response.json()
    assert response.json()["success"] is True
    return response.json()["changes"]


def with_secret(config: dict[str, Any]) -> dict[str, Any]:
    """The export with the real secret filled in, as an operator does for a new deployment (docs/deploy.md)."""
    config = copy.deepcopy(config)
    for tool in config["tools"]:
        if "auth" in tool:
            tool["auth"]["clientSecret"] = SECRET
    return config


def empty_deployment(client: APIClient) -> None:
    """Delete every definition through the Admin API, chat apps first, as a fresh deployment has none."""
    for app in client.post("/api/chat-admin/chat-apps/search", {}, format="json").json()["chatApps"]:
        assert client.delete(f"/api/chat-admin/chat-app/{app['chatAppId']}").status_code == 200
    for agent_id in ("helper", "researcher"):
        assert client.delete(f"/api/chat-admin/agent/{agent_id}").status_code == 200
    assert client.delete("/api/chat-admin/knowledge-base/handbook").status_code == 200
    for tool_id in ("weather@1", "forecast@2"):
        assert client.delete(f"/api/chat-admin/tool/{tool_id}").status_code == 200
    client.delete("/api/chat-admin/tagdef", {"tagDefinition": {"scope": "demo", "tag": "chart"}}, format="json")
    client.delete(
        "/api/chat-admin/semantic-directive", {"semanticDirective": {"scope": "agent#helper", "id": "answer-in-french"}}, format="json"
    )
    assert all(definitions == [] for definitions in export(client).values())


def audit_count() -> int:
    return AuditEntry.objects.count()
