"""Every rule of an agent write is refused with 400 INVALID_REQUEST naming the field, and a refused
write leaves nothing behind (docs/api.md, "Agents")."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentDefinition, AgentVersion
from knowledge.models import KnowledgeBase
from tests.conftest import assert_error, post_agent
from tests.factories import AgentFactory, ToolDefinitionFactory, function
from tools.models import LifecycleStatus, ToolDefinition

VALID = {"agentId": "helper", "basePrompt": "You help.", "toolIds": []}


@pytest.fixture
def tools(db):
    ToolDefinitionFactory(tool_id="weather@1", function_schema=[function("get_weather")])
    ToolDefinitionFactory(tool_id="weather@2", function_schema=[function("get_weather")])
    ToolDefinitionFactory(tool_id="news@1", function_schema=[function("get_news")])
    ToolDefinitionFactory(tool_id="old@1", lifecycle_status=LifecycleStatus.DEPRECATED, migration_path="use news@1")
    ToolDefinitionFactory(tool_id="dead@1", lifecycle_status=LifecycleStatus.RETIRED)
    AgentFactory(agent_id="researcher")
    KnowledgeBase.objects.create(knowledge_base_id="kb-1", name="KB", description="d", created_by="t", last_updated_by="t")


def without(key):
    return {name: value for name, value in VALID.items() if name != key}


BIG = "x" * (100 * 1024)

REFUSED_CREATES = [
    pytest.param(without("agentId"), "agent.agentId: is required", id="agentId missing"),
    pytest.param({**VALID, "agentId": "has space"}, "agent.agentId: must be 1 to 128 letters", id="agentId pattern"),
    pytest.param({**VALID, "agentId": "a" * 129}, "agent.agentId: must be at most 128 characters", id="agentId too long"),
    pytest.param({**VALID, "agentId": ""}, "agent.agentId: must not be blank", id="agentId empty"),
    pytest.param({**VALID, "agentId": 7}, "agent.agentId: must be a string", id="agentId not a string"),
    pytest.param(without("basePrompt"), "agent.basePrompt: is required", id="basePrompt missing"),
    pytest.param({**VALID, "basePrompt": 5}, "agent.basePrompt: must be a string", id="basePrompt not a string"),
    pytest.param({**VALID, "basePrompt": "   "}, "agent.basePrompt: must not be blank", id="basePrompt blank"),
    pytest.param(
        {**VALID, "basePrompt": "Hi {{#each user.email}}there{{/if}}"},
        "agent.basePrompt: does not compile as a Handlebars template",
        id="basePrompt does not compile",
    ),
    pytest.param(
        {**VALID, "basePrompt": "Hi {{> signature}}"},
        "agent.basePrompt: does not render as a Handlebars template (The partial signature could not be found)",
        id="basePrompt does not render",
    ),
    pytest.param(without("toolIds"), "agent.toolIds: is required", id="toolIds missing"),
    pytest.param({**VALID, "toolIds": "weather@1"}, "agent.toolIds: must be a list of strings", id="toolIds not a list"),
    pytest.param({**VALID, "toolIds": ["nope@1"]}, "agent.toolIds: tool nope@1 does not exist", id="tool unknown"),
    pytest.param({**VALID, "toolIds": ["news@1", "news@1"]}, "agent.toolIds: lists tool news@1 more than once", id="tool twice"),
    pytest.param({**VALID, "toolIds": ["old@1"]}, "agent.toolIds: tool old@1 is deprecated", id="tool deprecated"),
    pytest.param({**VALID, "toolIds": ["dead@1"]}, "agent.toolIds: tool dead@1 is retired", id="tool retired"),
    pytest.param(
        {**VALID, "toolIds": ["weather@1", "news@1", "weather@2"]},
        "agent.toolIds: tools weather@1 and weather@2 both define function 'get_weather'",
        id="function name clash",
    ),
    pytest.param({**VALID, "accessRules": {"effect": "allow"}}, "agent.accessRules: must be a list", id="accessRules not a list"),
    pytest.param({**VALID, "accessRules": ["allow"]}, "agent.accessRules[0]: must be an object", id="accessRule not an object"),
    pytest.param(
        {**VALID, "accessRules": [{"effect": "allow"}, {"effect": "maybe"}]},
        "agent.accessRules[1].effect: must be allow or deny",
        id="accessRule effect",
    ),
    pytest.param({**VALID, "accessRules": [{}]}, "agent.accessRules[0].effect: must be allow or deny", id="accessRule effect missing"),
    pytest.param(
        {**VALID, "accessRules": [{"effect": "deny", "condition": "user.userType =="}]},
        "agent.accessRules[0].condition: not a valid CEL expression",
        id="accessRule condition not CEL",
    ),
    pytest.param(
        {**VALID, "accessRules": [{"effect": "deny", "condition": 3}]},
        "agent.accessRules[0].condition: must be a string",
        id="condition type",
    ),
    pytest.param({**VALID, "accessRules": [{"effect": "deny", "order": "1"}]}, "agent.accessRules[0].order: must be a number", id="order"),
    pytest.param(
        {**VALID, "accessRules": [{"effect": "deny", "description": 1}]}, "agent.accessRules[0].description: must be a string", id="desc"
    ),
    pytest.param(
        {**VALID, "accessRules": [{"effect": "deny", "when": "x"}]}, "agent.accessRules[0].when: is not a known field", id="rule key"
    ),
    pytest.param({**VALID, "rolloutPolicy": []}, "agent.rolloutPolicy: must be an object", id="rolloutPolicy not an object"),
    pytest.param(
        {**VALID, "rolloutPolicy": {"betaAccounts": "acme"}}, "agent.rolloutPolicy.betaAccounts: must be a list of strings", id="beta"
    ),
    pytest.param(
        {**VALID, "rolloutPolicy": {"regionRestrictions": ["eu", 4]}},
        "agent.rolloutPolicy.regionRestrictions[1]: must be a non-empty string",
        id="regions",
    ),
    pytest.param(
        {**VALID, "rolloutPolicy": {"toolOverrides": {"weather@1": "weather@9"}}},
        "agent.rolloutPolicy.toolOverrides.weather@1: tool weather@9 does not exist",
        id="override target unknown",
    ),
    pytest.param(
        {**VALID, "rolloutPolicy": {"toolOverrides": {"weather@1": 2}}},
        "agent.rolloutPolicy.toolOverrides.weather@1: must be the id of the tool",
        id="override target type",
    ),
    pytest.param(
        {**VALID, "toolIds": ["weather@1", "news@1"], "rolloutPolicy": {"toolOverrides": {"news@1": "weather@2"}}},
        "agent.rolloutPolicy.toolOverrides: tools weather@1 and weather@2 both define function 'get_weather'",
        id="override clash",
    ),
    pytest.param({**VALID, "rolloutPolicy": {"canary": True}}, "agent.rolloutPolicy.canary: is not a known field", id="policy key"),
    pytest.param({**VALID, "collaborators": {}}, "agent.collaborators: must be a list", id="collaborators not a list"),
    pytest.param(
        {**VALID, "collaborators": [{"agentId": "researcher", "historyRelay": "TO_AGENT"}]},
        "agent.collaborators[0].instruction: is required",
        id="collaborator instruction",
    ),
    pytest.param(
        {**VALID, "collaborators": [{"agentId": "researcher", "instruction": "i", "historyRelay": "SIDEWAYS"}]},
        "agent.collaborators[0].historyRelay: must be TO_COLLABORATOR or TO_AGENT",
        id="collaborator historyRelay",
    ),
    pytest.param(
        {**VALID, "collaborators": [{"agentId": "ghost", "instruction": "i", "historyRelay": "TO_AGENT"}]},
        "agent.collaborators[0].agentId: agent ghost does not exist",
        id="collaborator unknown",
    ),
    pytest.param(
        {**VALID, "collaborators": [{"agentId": "helper", "instruction": "i", "historyRelay": "TO_AGENT"}]},
        "agent.collaborators[0].agentId: an agent cannot be its own collaborator",
        id="collaborator itself",
    ),
    pytest.param({**VALID, "knowledgeBases": [{"name": "kb"}]}, "agent.knowledgeBases[0].id: is required", id="knowledgeBase id"),
    pytest.param({**VALID, "knowledgeBases": "kb"}, "agent.knowledgeBases: must be a list", id="knowledgeBases not a list"),
    pytest.param({**VALID, "custom": ["a"]}, "agent.custom: must be an object", id="custom not an object"),
    pytest.param({**VALID, "custom": {"blob": BIG}}, "agent.custom: must be at most 100 KB (102400 bytes)", id="custom too big"),
    pytest.param({**VALID, "foundationModel": "gpt-4o"}, "agent.foundationModel: 'gpt-4o' names no known provider", id="model"),
    pytest.param({**VALID, "foundationModel": "mistral:large"}, "agent.foundationModel", id="model provider unknown"),
    pytest.param({**VALID, "foundationModel": "openai:"}, "agent.foundationModel", id="model name empty"),
    pytest.param({**VALID, "verificationFoundationModel": "cohere:x"}, "agent.verificationFoundationModel", id="verification model"),
    pytest.param({**VALID, "testType": "real"}, "agent.testType: must be mock", id="testType"),
    pytest.param({**VALID, "dontCacheThis": "sometimes"}, "agent.dontCacheThis: must be a boolean", id="dontCacheThis"),
    pytest.param(
        {**VALID, "agentCollaboration": 3},
        "agent.agentCollaboration: must be one of SUPERVISOR, SUPERVISOR_ROUTER, DISABLED",
        id="collaboration",
    ),
    pytest.param({**VALID, "colour": "blue"}, "agent.colour: is not a field of an agent definition", id="unknown field"),
    pytest.param("helper", "agent: must be an object", id="agent not an object"),
]


@pytest.mark.parametrize(("agent", "mentions"), REFUSED_CREATES)
def test_invalid_create_is_refused_naming_the_field_and_writes_nothing(admin_client, tools, agent, mentions):
    response = post_agent(admin_client, agent, userId="bob")
    assert_error(response, 400, "INVALID_REQUEST", mentions=mentions)
    assert not AgentDefinition.objects.filter(agent_id="helper").exists()
    assert not AgentVersion.objects.exists()


def test_a_missing_agent_field_is_refused(admin_client, db):
    assert_error(admin_client.post("/api/chat-admin/agent", {"userId": "bob"}, format="json"), 400, "INVALID_REQUEST", mentions="agent")


@pytest.mark.parametrize(
    "agent",
    [
        pytest.param({**VALID, "foundationModel": "offline"}, id="offline"),
        pytest.param(
            {**VALID, "foundationModel": "openai:gpt-4o", "verificationFoundationModel": "anthropic:claude-haiku-4-5"}, id="models"
        ),
        pytest.param({**VALID, "foundationModel": "bedrock:anthropic.claude-3-haiku"}, id="bedrock"),
        pytest.param({**VALID, "custom": {"blob": "x" * (100 * 1024 - len('{"blob":""}'))}}, id="custom exactly 100 KB"),
        pytest.param(
            {**VALID, "accessRules": [{"condition": "user.userType == 'internal-user'", "effect": "allow", "order": 1.5}]}, id="rule"
        ),
        pytest.param(
            {
                **VALID,
                "toolIds": ["weather@1", "news@1"],
                "rolloutPolicy": {"betaAccounts": ["acme"], "regionRestrictions": ["eu"], "toolOverrides": {"weather@1": "weather@2"}},
                "collaborators": [{"agentId": "researcher", "instruction": "Ask for facts.", "historyRelay": "TO_COLLABORATOR"}],
                "knowledgeBases": [{"id": "kb-1", "region": "eu"}],
                "agentCollaboration": "SUPERVISOR",
                "runtimeAdapter": "local:adapter",
                "dontCacheThis": True,
                "testType": "mock",
            },
            id="every field",
        ),
    ],
)
def test_valid_definitions_are_accepted(admin_client, tools, agent):
    response = post_agent(admin_client, agent, userId="bob")
    assert response.status_code == 200, response.json()
    stored = response.json()["agent"]
    for name, value in agent.items():
        assert stored[name] == value


def test_custom_one_byte_over_100_kb_is_refused(admin_client, db):
    custom = {"blob": "x" * (100 * 1024 - len('{"blob":""}') + 1)}
    assert len(json.dumps(custom, separators=(",", ":")).encode("utf-8")) == 102401
    response = post_agent(admin_client, {**VALID, "custom": custom}, userId="bob")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent.custom: must be at most 100 KB (102400 bytes) serialized; it is 102401")


def test_deprecated_tool_already_on_the_agent_may_stay(admin_client, tools):
    AgentFactory(agent_id="legacy", tool_ids=["old@1"])
    response = post_agent(admin_client, {"agentId": "legacy", "basePrompt": "Still here."}, userId="bob")
    assert response.status_code == 200, response.json()
    assert response.json()["agent"]["toolIds"] == ["old@1"]


def test_adding_a_deprecated_tool_to_an_existing_agent_is_refused(admin_client, tools):
    AgentFactory(agent_id="legacy", tool_ids=["news@1"])
    response = post_agent(admin_client, {"agentId": "legacy", "toolIds": ["news@1", "old@1"]}, userId="bob")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent.toolIds: tool old@1 is deprecated and cannot be added to an agent")
    assert "use news@1" in response.json()["error"]
    assert AgentDefinition.objects.get(pk="legacy").tool_ids == ["news@1"]


def test_refused_update_leaves_the_agent_and_version_unchanged(admin_client, tools):
    post_agent(admin_client, {**VALID, "toolIds": ["news@1"]}, userId="bob")
    response = post_agent(
        admin_client, {"agentId": "helper", "basePrompt": "Changed", "toolIds": ["news@1", "weather@1", "weather@2"]}, userId="bob"
    )
    assert_error(response, 400, "INVALID_REQUEST", mentions="both define function 'get_weather'")
    agent = admin_client.get("/api/chat-admin/agent/helper").json()["agent"]
    assert (agent["basePrompt"], agent["toolIds"], agent["version"]) == ("You help.", ["news@1"], 1)
    assert AgentVersion.objects.count() == 1


@pytest.mark.parametrize(
    ("change", "mentions"),
    [
        ({"basePrompt": None}, "agent.basePrompt: must not be null"),
        ({"toolIds": None}, "agent.toolIds: must not be null"),
        ({"dontCacheThis": None}, "agent.dontCacheThis"),
    ],
)
def test_update_cannot_null_a_required_field(admin_client, db, change, mentions):
    post_agent(admin_client, VALID, userId="bob")
    assert_error(post_agent(admin_client, {"agentId": "helper", **change}, userId="bob"), 400, "INVALID_REQUEST", mentions=mentions)


def test_update_validates_the_whole_result_not_only_the_change(admin_client, tools):
    post_agent(admin_client, {**VALID, "toolIds": ["weather@1"]}, userId="bob")
    # The tool is deleted behind the agent's back; the next write must not carry a dangling id on.
    ToolDefinition.objects.filter(tool_id="weather@1").delete()
    response = post_agent(admin_client, {"agentId": "helper", "basePrompt": "Changed"}, userId="bob")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent.toolIds: tool weather@1 does not exist")
