"""Admin API of agents (docs/api.md, "Agents"): create, update, get, delete, search, permissions."""

from __future__ import annotations

import pytest

from agents.models import AgentDefinition
from tests.conftest import assert_error, post_agent
from tests.factories import AgentFactory, ToolDefinitionFactory


@pytest.fixture
def weather(db):
    return ToolDefinitionFactory(tool_id="weather@1")


def test_create_sets_version_one_and_stamps_from_user_id(admin_client, weather):
    response = post_agent(admin_client, {"agentId": "helper", "basePrompt": "Be kind.", "toolIds": ["weather@1"]}, userId="bob")
    body = response.json()
    assert response.status_code == 200, body
    assert body["success"] is True
    agent = body["agent"]
    assert agent["agentId"] == "helper"
    assert agent["basePrompt"] == "Be kind."
    assert agent["toolIds"] == ["weather@1"]
    assert agent["version"] == 1
    assert agent["createdBy"] == agent["lastModifiedBy"] == "bob"
    assert agent["createdAt"] and agent["updatedAt"]
    assert agent["accessRules"] is None and agent["foundationModel"] is None and agent["dontCacheThis"] is False


def test_create_ignores_version_and_stamps_sent_by_the_client(admin_client):
    agent = {
        "agentId": "helper",
        "basePrompt": "Be kind.",
        "toolIds": [],
        "version": 41,
        "createdBy": "mallory",
        "lastModifiedBy": "mallory",
        "createdAt": "2001-01-01T00:00:00Z",
        "updatedAt": "2001-01-01T00:00:00Z",
    }
    created = post_agent(admin_client, agent, userId="bob").json()["agent"]
    assert created["version"] == 1
    assert created["createdBy"] == "bob"
    assert not created["createdAt"].startswith("2001")


def test_stamps_fall_back_to_the_caller_without_user_id(admin_client):
    created = post_agent(admin_client, {"agentId": "helper", "basePrompt": "p", "toolIds": []}).json()["agent"]
    assert created["createdBy"] == created["lastModifiedBy"] == "root-admin"


def test_update_changes_only_the_given_fields(admin_client, weather):
    post_agent(
        admin_client,
        {
            "agentId": "helper",
            "basePrompt": "Old prompt.",
            "toolIds": ["weather@1"],
            "foundationModel": "openai:gpt-4o",
            "custom": {"team": "support"},
            "accessRules": [{"effect": "allow"}],
        },
        userId="bob",
    )
    response = post_agent(admin_client, {"agentId": "helper", "basePrompt": "New prompt."}, userId="carol")
    agent = response.json()["agent"]
    assert response.status_code == 200
    assert agent["basePrompt"] == "New prompt."
    assert agent["toolIds"] == ["weather@1"]
    assert agent["foundationModel"] == "openai:gpt-4o"
    assert agent["custom"] == {"team": "support"}
    assert agent["accessRules"] == [{"effect": "allow"}]
    assert agent["version"] == 2
    assert agent["createdBy"] == "bob"
    assert agent["lastModifiedBy"] == "carol"
    assert admin_client.get("/api/chat-admin/agent/helper").json()["agent"] == agent


def test_update_with_null_clears_an_optional_field(admin_client):
    post_agent(admin_client, {"agentId": "helper", "basePrompt": "p", "toolIds": [], "foundationModel": "offline"})
    agent = post_agent(admin_client, {"agentId": "helper", "foundationModel": None}).json()["agent"]
    assert agent["foundationModel"] is None
    assert agent["version"] == 2


def test_update_that_changes_nothing_keeps_the_version(admin_client):
    first = post_agent(admin_client, {"agentId": "helper", "basePrompt": "p", "toolIds": [], "custom": {"a": 1}}, userId="bob")
    again = post_agent(admin_client, {"agentId": "helper", "basePrompt": "p", "custom": {"a": 1}}, userId="carol").json()["agent"]
    assert again == first.json()["agent"]
    versions = admin_client.get("/api/chat-admin/agent/helper/versions").json()["versions"]
    assert [row["version"] for row in versions] == [1]


def test_get_returns_the_agent(admin_client):
    post_agent(admin_client, {"agentId": "helper", "basePrompt": "p", "toolIds": []})
    response = admin_client.get("/api/chat-admin/agent/helper")
    assert response.status_code == 200
    assert response.json()["success"] is True
    assert response.json()["agent"]["agentId"] == "helper"


@pytest.mark.parametrize("method", ["get", "delete"])
def test_unknown_agent_is_a_404_invalid_agent_id(admin_client, method):
    response = getattr(admin_client, method)("/api/chat-admin/agent/nobody")
    assert_error(response, 404, "INVALID_AGENT_ID", mentions="nobody")


def test_delete_removes_the_agent(admin_client):
    post_agent(admin_client, {"agentId": "helper", "basePrompt": "p", "toolIds": []})
    response = admin_client.delete("/api/chat-admin/agent/helper")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert_error(admin_client.get("/api/chat-admin/agent/helper"), 404, "INVALID_AGENT_ID")
    assert_error(admin_client.get("/api/chat-admin/agent/helper/versions"), 404, "INVALID_AGENT_ID")


def test_search_returns_the_named_agents_and_skips_unknown_ids(admin_client, db):
    AgentFactory(agent_id="b-agent")
    AgentFactory(agent_id="a-agent")
    AgentFactory(agent_id="c-agent")
    response = admin_client.post(
        "/api/chat-admin/agents/search", {"agentIds": ["c-agent", "a-agent", "ghost"], "userId": "x"}, format="json"
    )
    assert response.status_code == 200
    assert [agent["agentId"] for agent in response.json()["agents"]] == ["a-agent", "c-agent"]


def test_search_without_ids_returns_every_agent(admin_client, db):
    AgentFactory(agent_id="b-agent")
    AgentFactory(agent_id="a-agent")
    response = admin_client.post("/api/chat-admin/agents/search", {"userId": "x"}, format="json")
    assert [agent["agentId"] for agent in response.json()["agents"]] == ["a-agent", "b-agent"]


def test_search_refuses_agent_ids_that_are_not_a_list(admin_client):
    response = admin_client.post("/api/chat-admin/agents/search", {"agentIds": "a-agent"}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agentIds")


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/chat-admin/agent", {"agent": {"agentId": "x", "basePrompt": "p", "toolIds": []}}),
        ("get", "/api/chat-admin/agent/x", None),
        ("delete", "/api/chat-admin/agent/x", None),
        ("post", "/api/chat-admin/agents/search", {}),
        ("get", "/api/chat-admin/agent/x/versions", None),
        ("get", "/api/chat-admin/agent/x/versions/1", None),
        ("post", "/api/chat-admin/agent/x/rollback", {"version": 1}),
    ],
)
def test_non_admin_is_refused_with_403(user_client, method, path, body):
    AgentFactory(agent_id="x")
    response = getattr(user_client, method)(path, body, format="json")
    assert_error(response, 403, "INSUFFICIENT_PERMISSIONS")
    agent = AgentDefinition.objects.get(pk="x")
    assert (agent.version, agent.versions.count()) == (1, 0)


def test_anonymous_caller_is_refused_with_401(anon_client, db):
    assert_error(anon_client.get("/api/chat-admin/agent/x"), 401)


def test_agent_endpoints_are_in_the_openapi_schema(anon_client, db):
    paths = anon_client.get("/api/schema/?format=json").json()["paths"]
    assert "post" in paths["/api/chat-admin/agent"]
    assert {"get", "delete"} <= set(paths["/api/chat-admin/agent/{agentId}"])
    assert "post" in paths["/api/chat-admin/agents/search"]
    assert "get" in paths["/api/chat-admin/agent/{agentId}/versions"]
    assert "post" in paths["/api/chat-admin/agent/{agentId}/rollback"]
