"""What an agent write refuses about its collaborators and knowledge bases (docs/api.md, "Collaborating agents"),
and the deletes refused while another record uses the agent or knowledge base."""

from __future__ import annotations

import pytest

from agents.models import AgentDefinition, AgentVersion
from tests.conftest import assert_error, post_agent
from tests.knowledge.conftest import create_base

pytestmark = pytest.mark.django_db


def an_agent(agent_id, **fields):
    return {"agentId": agent_id, "basePrompt": f"You are {agent_id}.", "toolIds": [], **fields}


def helpers(*agent_ids, relay="TO_AGENT"):
    return [{"agentId": agent_id, "instruction": f"Ask {agent_id}.", "historyRelay": relay} for agent_id in agent_ids]


def chain(client, *agent_ids):
    """Create the agents last first, each listing the next: chain(c, "a", "b", "c") is a → b → c."""
    for index in reversed(range(len(agent_ids))):
        following = agent_ids[index + 1 : index + 2]
        response = post_agent(client, an_agent(agent_ids[index], collaborators=helpers(*following) if following else None), userId="ops")
        assert response.status_code == 200, response.json()


def test_a_supervisor_with_collaborators_is_stored(admin_client):
    chain(admin_client, "writer")
    post_agent(admin_client, an_agent("researcher"), userId="ops")
    response = post_agent(
        admin_client, an_agent("lead", collaborators=helpers("writer", "researcher", relay="TO_COLLABORATOR")), userId="ops"
    )
    agent = response.json()["agent"]
    assert response.status_code == 200, response.json()
    assert [c["agentId"] for c in agent["collaborators"]] == ["writer", "researcher"]


@pytest.mark.parametrize(
    ("value", "stored"),
    [("SUPERVISOR", "SUPERVISOR"), ({"type": "SUPERVISOR_ROUTER"}, "SUPERVISOR_ROUTER"), ({"type": "DISABLED"}, "DISABLED")],
)
def test_agent_collaboration_as_a_string_or_an_object_is_stored_as_the_string(admin_client, value, stored):
    response = post_agent(admin_client, an_agent("lead", agentCollaboration=value), userId="ops")
    assert response.json()["agent"]["agentCollaboration"] == stored
    assert AgentDefinition.objects.get(pk="lead").agent_collaboration == stored
    assert admin_client.get("/api/chat-admin/agent/lead").json()["agent"]["agentCollaboration"] == stored


@pytest.mark.parametrize(
    ("value", "mentions"),
    [
        ("BOSS", "agent.agentCollaboration: must be one of SUPERVISOR, SUPERVISOR_ROUTER, DISABLED"),
        ({"type": "BOSS"}, "agent.agentCollaboration.type: must be one of SUPERVISOR"),
        ({"type": "SUPERVISOR", "mode": "x"}, "agent.agentCollaboration.mode: is not a known field"),
        ({}, "agent.agentCollaboration.type: must be one of"),
    ],
)
def test_unknown_collaboration_types_are_refused(admin_client, value, mentions):
    assert_error(
        post_agent(admin_client, an_agent("lead", agentCollaboration=value), userId="ops"), 400, "INVALID_REQUEST", mentions=mentions
    )
    assert not AgentDefinition.objects.exists()


def test_unknown_self_and_repeated_collaborators_are_refused(admin_client):
    post_agent(admin_client, an_agent("writer"), userId="ops")
    cases = [
        (helpers("ghost"), "agent.collaborators[0].agentId: agent ghost does not exist"),
        (helpers("writer", "lead"), "agent.collaborators[1].agentId: an agent cannot be its own collaborator"),
        (helpers("writer", "writer"), "agent.collaborators[1].agentId: agent writer is listed twice"),
    ]
    for collaborators, mentions in cases:
        assert_error(
            post_agent(admin_client, an_agent("lead", collaborators=collaborators), userId="ops"), 400, "INVALID_REQUEST", mentions=mentions
        )
    assert list(AgentDefinition.objects.values_list("agent_id", flat=True)) == ["writer"]


def test_a_loop_is_refused_naming_the_chain(admin_client):
    chain(admin_client, "a", "b", "c")
    response = post_agent(admin_client, an_agent("c", collaborators=helpers("a")), userId="ops")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent.collaborators: the chain c → a → b → c loops back to c")
    assert AgentDefinition.objects.get(pk="c").collaborators is None
    assert AgentVersion.objects.filter(agent_id="c").count() == 1
    response = post_agent(admin_client, an_agent("b", collaborators=helpers("c", "a")), userId="ops")
    assert_error(response, 400, mentions="the chain b → a → b loops back to b")


def test_chains_may_be_three_deep_and_no_deeper(admin_client):
    chain(admin_client, "a", "b", "c", "d")  # three levels below a
    post_agent(admin_client, an_agent("e"), userId="ops")
    response = post_agent(admin_client, an_agent("d", collaborators=helpers("e")), userId="ops")  # deepens a's chain from below
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent.collaborators: the chain a → b → c → d → e is 4 deep; at most 3")
    response = post_agent(admin_client, an_agent("top", collaborators=helpers("a")), userId="ops")  # deepens it from above
    assert_error(response, 400, mentions="the chain top → a → b → c → d is 4 deep")
    assert not AgentDefinition.objects.filter(pk="top").exists()
    assert AgentDefinition.objects.get(pk="d").collaborators is None


def test_an_update_that_leaves_collaborators_alone_is_not_rechecked_against_later_changes(admin_client):
    chain(admin_client, "a", "b")
    assert post_agent(admin_client, an_agent("a", basePrompt="Changed."), userId="ops").status_code == 200


def test_deleting_an_agent_listed_as_a_collaborator_is_refused_naming_the_supervisors(admin_client):
    chain(admin_client, "lead", "writer")
    post_agent(admin_client, an_agent("editor", collaborators=helpers("writer")), userId="ops")
    response = admin_client.delete("/api/chat-admin/agent/writer")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent writer is a collaborator of agents editor, lead")
    assert AgentDefinition.objects.filter(pk="writer").exists()
    post_agent(admin_client, an_agent("lead", collaborators=None), userId="ops")
    post_agent(admin_client, an_agent("editor", collaborators=[]), userId="ops")
    assert admin_client.delete("/api/chat-admin/agent/writer").json() == {"success": True}


def test_knowledge_bases_must_exist(admin_client):
    create_base(admin_client, "handbook")
    response = post_agent(admin_client, an_agent("helper", knowledgeBases=[{"id": "handbook"}, {"id": "missing"}]), userId="ops")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agent.knowledgeBases[1].id: knowledge base missing does not exist")
    assert not AgentDefinition.objects.exists()
    assert post_agent(admin_client, an_agent("helper", knowledgeBases=[{"id": "handbook"}]), userId="ops").status_code == 200


def test_deleting_a_knowledge_base_an_agent_lists_is_refused_naming_the_agents(admin_client):
    create_base(admin_client, "handbook")
    post_agent(admin_client, an_agent("helper", knowledgeBases=[{"id": "handbook"}]), userId="ops")
    post_agent(admin_client, an_agent("aide", knowledgeBases=[{"id": "handbook"}]), userId="ops")
    response = admin_client.delete("/api/chat-admin/knowledge-base/handbook")
    assert_error(response, 400, "INVALID_REQUEST", mentions="knowledge base handbook is used by agents aide, helper")
    assert admin_client.get("/api/chat-admin/knowledge-base/handbook").status_code == 200
    post_agent(admin_client, an_agent("helper", knowledgeBases=[]), userId="ops")
    post_agent(admin_client, an_agent("aide", knowledgeBases=None), userId="ops")
    assert admin_client.delete("/api/chat-admin/knowledge-base/handbook").json() == {"success": True}


def test_a_rollback_to_a_version_whose_knowledge_base_is_gone_is_refused(admin_client):
    create_base(admin_client, "handbook")
    post_agent(admin_client, an_agent("helper", knowledgeBases=[{"id": "handbook"}]), userId="ops")
    post_agent(admin_client, an_agent("helper", knowledgeBases=[]), userId="ops")
    admin_client.delete("/api/chat-admin/knowledge-base/handbook")
    response = admin_client.post("/api/chat-admin/agent/helper/rollback", {"version": 1}, format="json")
    assert_error(response, 400, mentions="agent.knowledgeBases[0].id: knowledge base handbook does not exist")
