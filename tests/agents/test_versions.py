"""Agent versions (docs/api.md, "Agents"): one version per changing write, an immutable history row
per version, and rollback as a new version."""

from __future__ import annotations

import pytest

from agents.models import AgentVersion
from tests.conftest import assert_error, assert_ok, post_agent
from tests.factories import ToolDefinitionFactory
from tools.models import LifecycleStatus, ToolDefinition

# Fields a rollback restores; the others are the service's (version, stamps, times).
DEFINITION_FIELDS = (
    "agentId",
    "basePrompt",
    "toolIds",
    "foundationModel",
    "verificationFoundationModel",
    "accessRules",
    "rolloutPolicy",
    "collaborators",
    "agentCollaboration",
    "knowledgeBases",
    "custom",
    "runtimeAdapter",
    "dontCacheThis",
    "testType",
)


def definition(agent):
    return {name: agent[name] for name in DEFINITION_FIELDS}


@pytest.fixture
def history(admin_client, db):
    """An agent at version 3: v1 plain, v2 with a model and a tool, v3 with a new prompt."""
    ToolDefinitionFactory(tool_id="weather@1")
    v1 = assert_ok(
        post_agent(admin_client, {"agentId": "helper", "basePrompt": "First.", "toolIds": [], "custom": {"n": 1}}, userId="ann")
    )["agent"]
    v2 = assert_ok(
        post_agent(admin_client, {"agentId": "helper", "foundationModel": "openai:gpt-4o", "toolIds": ["weather@1"]}, userId="bob")
    )["agent"]
    v3 = assert_ok(post_agent(admin_client, {"agentId": "helper", "basePrompt": "Third."}, userId="cid"))["agent"]
    return v1, v2, v3


def test_each_changing_update_raises_the_version_by_one(history):
    assert [agent["version"] for agent in history] == [1, 2, 3]


def test_sequential_updates_raise_the_version_once_each(admin_client, db):
    assert_ok(post_agent(admin_client, {"agentId": "busy", "basePrompt": "p0", "toolIds": []}, userId="bob"))
    for number in range(1, 21):
        assert_ok(post_agent(admin_client, {"agentId": "busy", "basePrompt": f"p{number}"}, userId="bob"))
    assert admin_client.get("/api/chat-admin/agent/busy").json()["agent"]["version"] == 21
    assert AgentVersion.objects.filter(agent_id="busy").count() == 21


def test_versions_lists_each_version_newest_first_with_who_and_when(admin_client, history):
    response = admin_client.get("/api/chat-admin/agent/helper/versions")
    assert response.status_code == 200
    versions = response.json()["versions"]
    assert [(row["version"], row["modifiedBy"]) for row in versions] == [(3, "cid"), (2, "bob"), (1, "ann")]
    assert versions[0]["modifiedAt"] == history[2]["updatedAt"]
    assert set(versions[0]) == {"version", "modifiedBy", "modifiedAt"}


def test_each_version_keeps_the_full_definition_as_it_was(admin_client, history):
    for agent in history:
        response = admin_client.get(f"/api/chat-admin/agent/helper/versions/{agent['version']}")
        assert response.status_code == 200
        assert response.json()["version"]["agent"] == agent


def test_unknown_version_is_a_404(admin_client, history):
    assert_error(admin_client.get("/api/chat-admin/agent/helper/versions/9"), 404, "NOT_FOUND", mentions="no version 9")


def test_versions_of_an_unknown_agent_is_a_404(admin_client, db):
    assert_error(admin_client.get("/api/chat-admin/agent/ghost/versions"), 404, "INVALID_AGENT_ID")


def test_rollback_writes_the_old_definition_as_a_new_version(admin_client, history):
    v1 = history[0]
    response = admin_client.post("/api/chat-admin/agent/helper/rollback", {"version": 1, "userId": "dee"}, format="json")
    assert response.status_code == 200, response.json()
    agent = response.json()["agent"]
    assert agent["version"] == 4
    assert definition(agent) == definition(v1)
    assert agent["foundationModel"] is None and agent["toolIds"] == []
    assert agent["lastModifiedBy"] == "dee"
    assert agent["createdBy"] == "ann"
    versions = admin_client.get("/api/chat-admin/agent/helper/versions").json()["versions"]
    assert (versions[0]["version"], versions[0]["modifiedBy"]) == (4, "dee")
    # History is append-only: version 1 still reads as it was written.
    assert admin_client.get("/api/chat-admin/agent/helper/versions/1").json()["version"]["agent"] == v1


def test_rollback_to_an_unknown_version_is_refused(admin_client, history):
    response = admin_client.post("/api/chat-admin/agent/helper/rollback", {"version": 7}, format="json")
    assert_error(response, 404, "NOT_FOUND", mentions="agent helper has no version 7")
    assert admin_client.get("/api/chat-admin/agent/helper").json()["agent"]["version"] == 3


@pytest.mark.parametrize("body", [{}, {"version": "one"}, {"version": 0}])
def test_rollback_needs_a_version_number(admin_client, history, body):
    assert_error(
        admin_client.post("/api/chat-admin/agent/helper/rollback", body, format="json"), 400, "INVALID_REQUEST", mentions="version"
    )


def test_rollback_of_an_unknown_agent_is_a_404(admin_client, db):
    response = admin_client.post("/api/chat-admin/agent/ghost/rollback", {"version": 1}, format="json")
    assert_error(response, 404, "INVALID_AGENT_ID")


def test_rollback_is_validated_like_any_write(admin_client, history):
    ToolDefinition.objects.filter(tool_id="weather@1").delete()
    response = admin_client.post("/api/chat-admin/agent/helper/rollback", {"version": 2}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent.toolIds: tool weather@1 does not exist")
    assert admin_client.get("/api/chat-admin/agent/helper").json()["agent"]["version"] == 3


def test_rollback_does_not_bring_back_a_tool_deprecated_since(admin_client, history):
    assert_ok(post_agent(admin_client, {"agentId": "helper", "toolIds": []}, userId="bob"))
    ToolDefinition.objects.filter(tool_id="weather@1").update(lifecycle_status=LifecycleStatus.DEPRECATED)
    response = admin_client.post("/api/chat-admin/agent/helper/rollback", {"version": 2}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="tool weather@1 is deprecated")


def test_rollback_to_a_definition_equal_to_the_current_one_changes_nothing(admin_client, history):
    response = admin_client.post("/api/chat-admin/agent/helper/rollback", {"version": 3}, format="json")
    assert response.status_code == 200
    assert response.json()["agent"] == history[2]
    assert AgentVersion.objects.filter(agent_id="helper").count() == 3
