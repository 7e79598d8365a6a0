"""Configuration as code through the Admin API (docs/api.md, "Configuration as code"):
`GET /api/chat-admin/config` and `POST /api/chat-admin/config/apply`."""

from __future__ import annotations

import pytest

from tests.config.conftest import KINDS, SECRET, applied, apply, audit_count, empty_deployment, export, export_body, populate, with_secret
from tests.conftest import assert_error
from tests.factories import INLINE_CODE, tag_payload, tool_payload
from tools.models import ToolDefinition

pytestmark = pytest.mark.django_db


def test_export_lists_every_kind_without_stamps_versions_counts_or_secrets(admin_client):
    populate(admin_client)

    body = export_body(admin_client)

    assert body["success"] is True
    config = body["config"]
    assert set(config) == set(KINDS)
    assert [tool["toolId"] for tool in config["tools"]] == ["forecast@2", "weather@1"]
    assert config["tools"][0]["auth"]["clientSecret"] == "********"
    assert SECRET not in str(body)
    assert [agent["agentId"] for agent in config["agents"]] == ["helper", "researcher"]
    assert config["knowledgeBases"] == [
        {
            "knowledgeBaseId": "handbook",
            "name": "Handbook",
            "description": "Company policies",
            "source": "local",
            "externalId": None,
            "retrieval": {"strategy": "tool", "topK": 5, "mode": "lexical"},
            "accessRules": None,
        }
    ]
    assert config["semanticDirectives"][0]["id"] == "answer-in-french"
    assert config["chatApps"][0]["agentId"] == "helper"
    managed = {"version", "createdBy", "lastModifiedBy", "lastUpdatedBy", "createdAt", "updatedAt", "createDate", "lastUpdate"}
    managed |= {"documentCount", "chunkCount", "groupId"}
    for kind in KINDS:
        for definition in config[kind]:
            assert managed.isdisjoint(definition), (kind, definition)


def test_export_then_apply_on_an_empty_deployment_gives_the_same_export(admin_client):
    populate(admin_client)
    exported = export(admin_client)
    empty_deployment(admin_client)

    changes = applied(admin_client, with_secret(exported))

    assert {change["action"] for change in changes} == {"create"}
    kinds = ["tools", "tools", "knowledgeBases", "agents", "agents", "tagDefinitions", "semanticDirectives", "chatApps"]
    assert [change["kind"] for change in changes] == kinds
    # The collaborator is written before the agent that lists it.
    assert [change["id"] for change in changes if change["kind"] == "agents"] == ["researcher", "helper"]
    assert export(admin_client) == exported
    stored = admin_client.get("/api/chat-admin/agent/helper").json()["agent"]
    assert stored["createdBy"] == "deployer"


def test_applying_the_same_config_twice_changes_nothing_the_second_time(admin_client):
    populate(admin_client)
    exported = export(admin_client)
    before = {
        "tool": admin_client.get("/api/chat-admin/tool/weather@1").json()["tool"],
        "agent": admin_client.get("/api/chat-admin/agent/helper").json()["agent"],
        "tags": admin_client.post("/api/chat-admin/tagdef/search", {}, format="json").json()["tagDefinitions"],
    }
    audits = audit_count()

    changes = applied(admin_client, exported)
    again = applied(admin_client, exported)

    for result in (changes, again):
        assert len(result) == 8
        assert {change["action"] for change in result} == {"unchanged"}
    assert admin_client.get("/api/chat-admin/tool/weather@1").json()["tool"] == before["tool"]
    assert admin_client.get("/api/chat-admin/agent/helper").json()["agent"] == before["agent"]
    assert admin_client.get("/api/chat-admin/agent/helper/versions").json()["versions"][0]["version"] == 1
    assert admin_client.post("/api/chat-admin/tagdef/search", {}, format="json").json()["tagDefinitions"] == before["tags"]
    assert audit_count() == audits


def test_a_definition_written_differently_but_meaning_the_same_is_unchanged(admin_client):
    populate(admin_client)
    before = export_body(admin_client)
    stamps = admin_client.post("/api/chat-admin/tagdef/search", {}, format="json").json()["tagDefinitions"][0]["lastUpdate"]
    audits = audit_count()
    config = {
        "tools": [tool_payload("inline")],  # lifecycle, tags and executionTimeout left to their stored values
        "tagDefinitions": [tag_payload(renderingContexts={"inline": True})],  # the boolean form of a context
        "semanticDirectives": [
            {
                "scopeType": "agent",
                "scopeValue": "helper",
                "id": "answer-in-french",
                "description": "French",
                "instructions": "Answer in French.",
            }
        ],
    }

    changes = applied(admin_client, config)

    assert changes == [
        {"kind": "tools", "id": "weather@1", "action": "unchanged"},
        {"kind": "tagDefinitions", "id": "demo.chart", "action": "unchanged"},
        {"kind": "semanticDirectives", "id": "agent#helper/answer-in-french", "action": "unchanged"},
    ]
    assert export_body(admin_client) == before
    assert admin_client.post("/api/chat-admin/tagdef/search", {}, format="json").json()["tagDefinitions"][0]["lastUpdate"] == stamps
    assert audit_count() == audits


def test_an_optional_field_left_out_of_a_definition_takes_its_default(admin_client):
    populate(admin_client)
    rule = [{"condition": "user.userType == 'internal-user'", "effect": "allow"}]
    admin_client.post("/api/chat-admin/tool", {"tool": {"toolId": "weather@1", "accessRules": rule}}, format="json")
    admin_client.post("/api/chat-admin/agent", {"agent": {"agentId": "helper", "foundationModel": "offline"}}, format="json")
    admin_client.post("/api/chat-admin/chat-app", {"chatApp": {"chatAppId": "support", "retentionDays": 30}}, format="json")
    config = export(admin_client)
    assert config["tools"][1]["accessRules"] == rule
    del config["tools"][1]["accessRules"], config["agents"][0]["foundationModel"], config["chatApps"][0]["retentionDays"]

    changes = applied(admin_client, config)

    assert [change for change in changes if change["action"] != "unchanged"] == [
        {"kind": "tools", "id": "weather@1", "action": "update"},
        {"kind": "agents", "id": "helper", "action": "update"},
        {"kind": "chatApps", "id": "support", "action": "update"},
    ]
    after = export(admin_client)
    assert "accessRules" not in after["tools"][1]
    assert after["agents"][0]["foundationModel"] is None
    assert after["chatApps"][0]["retentionDays"] is None


def test_a_changed_definition_is_updated_once_with_a_new_version_and_an_audit_entry(admin_client):
    populate(admin_client)
    config = export(admin_client)
    config["agents"][0]["basePrompt"] = "You help, briefly."
    audits = audit_count()

    changes = applied(admin_client, config)

    assert [change for change in changes if change["action"] != "unchanged"] == [{"kind": "agents", "id": "helper", "action": "update"}]
    agent = admin_client.get("/api/chat-admin/agent/helper").json()["agent"]
    assert (agent["basePrompt"], agent["version"], agent["lastModifiedBy"]) == ("You help, briefly.", 2, "deployer")
    assert audit_count() == audits + 1


def test_one_invalid_definition_is_a_400_naming_it_and_nothing_is_written(admin_client):
    config = {
        "tools": [tool_payload("inline", code=INLINE_CODE)],
        "agents": [{"agentId": "helper", "basePrompt": "   ", "toolIds": ["weather@1"]}],
    }

    body = assert_error(apply(admin_client, config), 400, "INVALID_REQUEST")

    assert "config.agents[helper].basePrompt" in body["error"]
    assert all(definitions == [] for definitions in export(admin_client).values())


def test_a_definition_naming_a_missing_record_rolls_back_the_ones_written_before_it(admin_client):
    config = {
        "tools": [tool_payload("inline")],
        "agents": [{"agentId": "helper", "basePrompt": "Hi", "toolIds": ["weather@1"]}],
        "chatApps": [{"chatAppId": "support", "title": "Support", "agentId": "nobody"}],
    }

    body = assert_error(apply(admin_client, config), 400, "INVALID_REQUEST")

    assert body["error"] == "config.chatApps[support].agentId: agent nobody does not exist"
    assert all(definitions == [] for definitions in export(admin_client).values())


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ([], "config: must be an object of definition lists"),
        ({"widgets": []}, "config.widgets: is not a kind of definition"),
        ({"tools": {}}, "config.tools: must be a list of definitions"),
        ({"agents": [{"basePrompt": "Hi"}]}, "config.agents[0].agentId: is required"),
        ({"tools": [tool_payload(), tool_payload()]}, "config.tools[1]: weather@1 is listed twice (also at index 0)"),
        ({"tools": [tool_payload(description="x" * 600)]}, "config.tools[weather@1].description"),
    ],
)
def test_a_malformed_document_is_a_400_naming_where(admin_client, config, message):
    assert_error(apply(admin_client, config), 400, "INVALID_REQUEST", mentions=message)


def test_prune_deletes_the_unlisted_records_of_the_kinds_present_only(admin_client):
    populate(admin_client)
    config = export(admin_client)
    kept = {
        "tools": [tool for tool in config["tools"] if tool["toolId"] == "weather@1"],
        "tagDefinitions": [],
        "agents": [agent for agent in config["agents"] if agent["agentId"] == "helper"],
    }
    kept["agents"][0]["collaborators"] = None

    changes = applied(admin_client, kept, prune=True)

    deletes = [(change["kind"], change["id"]) for change in changes if change["action"] == "delete"]
    assert deletes == [("tagDefinitions", "demo.chart"), ("agents", "researcher"), ("tools", "forecast@2")]
    after = export(admin_client)
    assert [tool["toolId"] for tool in after["tools"]] == ["weather@1"]
    assert after["tagDefinitions"] == []
    assert [agent["agentId"] for agent in after["agents"]] == ["helper"]
    # Kinds the document leaves out are neither written nor pruned.
    assert len(after["semanticDirectives"]) == len(after["chatApps"]) == len(after["knowledgeBases"]) == 1


def test_prune_deletes_chat_apps_then_supervisors_then_their_collaborators(admin_client):
    populate(admin_client)
    supervisor = {"agentId": "zeta", "basePrompt": "You lead.", "toolIds": []}
    supervisor["collaborators"] = [{"agentId": "helper", "instruction": "Ask for help", "historyRelay": "TO_AGENT"}]
    admin_client.post("/api/chat-admin/agent", {"agent": supervisor}, format="json")

    changes = applied(admin_client, {"agents": [], "chatApps": []}, prune=True)

    assert changes == [
        {"kind": "chatApps", "id": "support", "action": "delete"},
        {"kind": "agents", "id": "zeta", "action": "delete"},
        {"kind": "agents", "id": "helper", "action": "delete"},
        {"kind": "agents", "id": "researcher", "action": "delete"},
    ]
    assert export(admin_client)["agents"] == []


def test_a_refused_prune_is_a_400_and_nothing_is_written(admin_client):
    populate(admin_client)

    body = assert_error(apply(admin_client, {"knowledgeBases": []}, prune=True), 400, "INVALID_REQUEST")

    assert body["error"].startswith("config.knowledgeBases[handbook].knowledgeBaseId: knowledge base handbook is used by agents helper")
    assert len(export(admin_client)["knowledgeBases"]) == 1


def test_a_redacted_secret_keeps_the_stored_one_and_a_new_one_replaces_it(admin_client):
    populate(admin_client)
    config = export(admin_client)
    config["tools"][0]["description"] = "Forecasts, redacted secret sent back"

    changes = applied(admin_client, {"tools": config["tools"]})

    assert {"kind": "tools", "id": "forecast@2", "action": "update"} in changes
    assert ToolDefinition.objects.get(tool_id="forecast@2").auth["clientSecret"] == SECRET
    config["tools"][0]["auth"]["clientSecret"] = "rotated-secret"
    assert {"kind": "tools", "id": "forecast@2", "action": "update"} in applied(admin_client, {"tools": config["tools"]})
    assert ToolDefinition.objects.get(tool_id="forecast@2").auth["clientSecret"] == "rotated-secret"


def test_a_redacted_secret_cannot_create_a_tool(admin_client):
    populate(admin_client)
    config = export(admin_client)
    empty_deployment(admin_client)

    body = assert_error(apply(admin_client, config), 400, "INVALID_REQUEST")

    assert "config.tools[forecast@2].auth.clientSecret: must be the secret itself" in body["error"]


def test_a_dry_run_reports_the_changes_and_writes_nothing(admin_client):
    populate(admin_client)
    config = export(admin_client)
    empty_deployment(admin_client)
    config = with_secret(config)
    audits = audit_count()

    changes = applied(admin_client, config, dryRun=True)

    assert len(changes) == 8 and {change["action"] for change in changes} == {"create"}
    assert all(definitions == [] for definitions in export(admin_client).values())
    assert audit_count() == audits
    assert applied(admin_client, config) == changes


def test_a_non_admin_may_neither_export_nor_apply(user_client):
    assert_error(user_client.get("/api/chat-admin/config"), 403, "INSUFFICIENT_PERMISSIONS")
    assert_error(apply(user_client, {"tools": [tool_payload()]}), 403, "INSUFFICIENT_PERMISSIONS")


def test_apply_options_must_be_booleans(admin_client):
    assert_error(apply(admin_client, {}, prune="yes"), 400, "INVALID_REQUEST", mentions="prune: must be true or false")
