"""Django admin of agents: the same rules and versioning as the Admin API, and rollback."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from agents.models import AgentDefinition, AgentVersion
from chat.users.models import ChatUser
from tests.factories import AgentFactory, ToolDefinitionFactory, function
from tools.models import LifecycleStatus, ToolDefinition

ADD_URL = "/admin/agents/agentdefinition/add/"


def change_url(agent_id: str) -> str:
    return f"/admin/agents/agentdefinition/{agent_id}/change/"


@pytest.fixture
def tools(db):
    ToolDefinitionFactory(tool_id="weather@1", function_schema=[function("get_weather")])
    ToolDefinitionFactory(tool_id="weather@2", function_schema=[function("get_weather")])
    ToolDefinitionFactory(tool_id="old@1", lifecycle_status=LifecycleStatus.DEPRECATED)


def form(**fields) -> dict[str, str]:
    """The POST of the agent form: JSON fields as the JSON editor submits them."""
    data = {
        "agent_id": "helper",
        "base_prompt": "You help.",
        "tool_ids": [],
        "foundation_model": "",
        "verification_foundation_model": "",
        "access_rules": "null",
        "rollout_policy": "null",
        "collaborators": "null",
        "agent_collaboration": "null",
        "knowledge_bases": "null",
        "custom": "null",
        "runtime_adapter": "",
        "test_type": "",
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
        "versions-MIN_NUM_FORMS": "0",
        "versions-MAX_NUM_FORMS": "0",
    }
    for name, value in fields.items():
        # Tool ids are picked in a multiple select: one value per chosen tool.
        data[name] = value if isinstance(value, str) or name == "tool_ids" else json.dumps(value)
    return data


def change_form(staff: Client, agent_id: str, **fields) -> dict[str, str]:
    """The change form's POST: the version inline's hidden management fields as rendered, plus `fields`."""
    html = staff.get(change_url(agent_id)).content.decode()
    hidden = dict(re.findall(r'<input type="hidden" name="(versions-[^"]+)" value="([^"]*)"', html))
    data = {**form(**fields), **hidden}
    data.pop("agent_id")
    return data


def test_changelist_shows_the_agent_columns(staff, tools):
    AgentFactory(agent_id="helper", tool_ids=["weather@1"], foundation_model="offline", test_type="mock")
    response = staff.get("/admin/agents/agentdefinition/")
    html = response.content.decode()
    assert response.status_code == 200
    for header in (
        "column-agent_id",
        "column-version",
        "column-foundation_model",
        "column-tool_count",
        "column-test_type",
        "column-updated_at",
    ):
        assert header in html
    assert "helper" in html


def test_changelist_filters_and_searches(staff, db):
    AgentFactory(agent_id="mocked", test_type="mock", base_prompt="about weather")
    AgentFactory(agent_id="real", base_prompt="about news")
    assert "mocked" not in staff.get("/admin/agents/agentdefinition/?test_type__exact=mock&q=news").content.decode()
    found = staff.get("/admin/agents/agentdefinition/?q=weather").content.decode()
    assert "mocked" in found and ">real<" not in found


def test_add_form_creates_version_one_with_history_and_stamps(staff, tools):
    response = staff.post(ADD_URL, form(tool_ids=["weather@1"], foundation_model="openai:gpt-4o", custom={"team": "x"}))
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = AgentDefinition.objects.get(pk="helper")
    assert (agent.version, agent.created_by, agent.last_modified_by) == (1, "staff", "staff")
    assert agent.tool_ids == ["weather@1"] and agent.custom == {"team": "x"} and agent.access_rules is None
    assert list(agent.versions.values_list("version", "modified_by")) == [(1, "staff")]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tool_ids": ["nope@1"]}, "toolIds: tool nope@1 does not exist"),
        ({"tool_ids": ["old@1"]}, "toolIds: tool old@1 is deprecated"),
        ({"tool_ids": ["weather@1", "weather@2"]}, "both define function &#x27;get_weather&#x27;"),
        ({"access_rules": [{"effect": "allow", "condition": "user.userType =="}]}, "accessRules[0].condition: not a valid CEL expression"),
        ({"custom": {"blob": "x" * 102400}}, "custom: must be at most 100 KB"),
        ({"foundation_model": "gpt-4o"}, "names no known provider"),
        ({"collaborators": [{"agentId": "helper", "instruction": "i", "historyRelay": "TO_AGENT"}]}, "own collaborator"),
        ({"agent_id": "has space"}, "agentId: must be 1 to 128 letters"),
    ],
)
def test_add_form_refuses_what_the_api_refuses(staff, tools, fields, message):
    response = staff.post(ADD_URL, form(**fields))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not AgentDefinition.objects.exists()
    assert not AgentVersion.objects.exists()


def test_change_form_saves_a_new_version_through_the_service(staff, tools):
    staff.post(ADD_URL, form())
    response = staff.post(change_url("helper"), change_form(staff, "helper", base_prompt="Changed.", tool_ids=["weather@1"]))
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = AgentDefinition.objects.get(pk="helper")
    assert (agent.version, agent.base_prompt, agent.tool_ids) == (2, "Changed.", ["weather@1"])
    assert sorted(agent.versions.values_list("version", flat=True)) == [1, 2]


def test_change_form_saved_unchanged_keeps_the_version(staff, db):
    staff.post(ADD_URL, form())
    response = staff.post(change_url("helper"), change_form(staff, "helper"))
    assert response.status_code == 302
    assert AgentDefinition.objects.get(pk="helper").version == 1
    assert AgentVersion.objects.count() == 1


def test_change_form_refuses_adding_a_deprecated_tool(staff, tools):
    staff.post(ADD_URL, form())
    response = staff.post(change_url("helper"), change_form(staff, "helper", tool_ids=["old@1"]))
    assert response.status_code == 200
    assert "toolIds: tool old@1 is deprecated" in response.content.decode()
    assert AgentDefinition.objects.get(pk="helper").version == 1


def test_change_page_shows_the_history_with_a_rollback_button_per_past_version(staff, db):
    staff.post(ADD_URL, form())
    staff.post(change_url("helper"), change_form(staff, "helper", base_prompt="Second."))
    html = staff.get(change_url("helper")).content.decode()
    assert 'form="agent-rollback" name="version" value="1"' in html
    assert 'name="version" value="2"' not in html  # the current version has no button
    assert 'id="agent-rollback" method="post" action="/admin/agents/agentdefinition/helper/rollback/"' in html


def test_rollback_button_writes_the_old_definition_as_a_new_version(staff, tools):
    staff.post(ADD_URL, form(custom={"n": 1}))
    staff.post(change_url("helper"), change_form(staff, "helper", base_prompt="Second.", tool_ids=["weather@1"], custom={"n": 2}))
    response = staff.post("/admin/agents/agentdefinition/helper/rollback/", {"version": "1"})
    assert response.status_code == 302
    assert response["Location"] == change_url("helper")
    agent = AgentDefinition.objects.get(pk="helper")
    assert (agent.version, agent.base_prompt, agent.tool_ids, agent.custom) == (3, "You help.", [], {"n": 1})
    assert agent.versions.get(version=3).modified_by == "staff"
    assert "now at version 3" in staff.get(change_url("helper")).content.decode()


def test_rollback_button_reports_a_refusal_without_changing_the_agent(staff, tools):
    staff.post(ADD_URL, form(tool_ids=["weather@1"]))
    staff.post(change_url("helper"), change_form(staff, "helper", tool_ids=[]))
    ToolDefinition.objects.filter(tool_id="weather@1").delete()
    response = staff.post("/admin/agents/agentdefinition/helper/rollback/", {"version": "1"}, follow=True)
    assert "Rollback refused: agent.toolIds: tool weather@1 does not exist" in response.content.decode()
    assert AgentDefinition.objects.get(pk="helper").version == 2


def test_rollback_needs_post(staff, db):
    staff.post(ADD_URL, form())
    assert staff.get("/admin/agents/agentdefinition/helper/rollback/?version=1").status_code == 405
    assert AgentDefinition.objects.get(pk="helper").version == 1


def test_rollback_needs_the_csrf_token(db):
    AgentFactory(agent_id="helper")
    client = Client(enforce_csrf_checks=True)
    client.force_login(ChatUser.objects.create_superuser("staff"))
    response = client.post("/admin/agents/agentdefinition/helper/rollback/", {"version": "1"})
    assert response.status_code == 403


def test_rollback_needs_a_staff_login(db):
    AgentFactory(agent_id="helper")
    client = Client()
    client.force_login(ChatUser.objects.create_user("visitor"))
    response = client.post("/admin/agents/agentdefinition/helper/rollback/", {"version": "1"})
    assert response.status_code == 302
    assert "/login/" in response["Location"]
    assert AgentDefinition.objects.get(pk="helper").version == 1


@pytest.mark.parametrize(("field", "typed"), [("custom", '{"team": '), ("custom", ""), ("access_rules", "[{]"), ("knowledge_bases", "")])
def test_change_form_refuses_malformed_or_empty_json_on_the_field_keeps_the_text_and_saves_nothing(staff, tools, field, typed):
    AgentFactory(agent_id="helper", base_prompt="Original.", custom={"team": "x"})
    data = change_form(staff, "helper", base_prompt="Changed.", custom={"team": "x"})
    data[field] = typed
    response = staff.post(change_url("helper"), data)

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert list(form.errors) == [field]
    assert form[field].value() == typed
    agent = AgentDefinition.objects.get()
    assert (agent.version, agent.base_prompt, agent.custom) == (1, "Original.", {"team": "x"})


def test_help_texts_render_as_text(staff, db):
    page = staff.get(ADD_URL).content.decode()
    assert "&lt;provider&gt;:&lt;model&gt;" in page, "the model help text is escaped, not read as HTML tags"
    assert "<provider>" not in page


def test_tool_ids_are_picked_from_the_existing_tools(staff, tools):
    page = staff.get(ADD_URL).content.decode()
    picker = re.search(r'<select name="tool_ids"[^>]*>(.*?)</select>', page, re.S)
    assert picker is not None and "selectfilter" in picker.group(0)
    assert re.findall(r'<option value="([^"]+)"', picker.group(1)) == ["old@1", "weather@1", "weather@2"]
    assert "old@1 (" in picker.group(1) and "deprecated" in picker.group(1)

    response = staff.post(ADD_URL, form(tool_ids=["weather@2"]))
    assert response.status_code == 302
    assert AgentDefinition.objects.get().tool_ids == ["weather@2"]


def test_the_change_form_lists_a_held_tool_that_no_longer_exists_so_the_validator_names_it(staff, tools):
    AgentFactory(agent_id="helper", tool_ids=["gone@1"])
    page = staff.get(change_url("helper")).content.decode()
    assert '<option value="gone@1" selected>gone@1 (no such tool)</option>' in page
    response = staff.post(change_url("helper"), change_form(staff, "helper", tool_ids=["gone@1"]))
    assert "toolIds: tool gone@1 does not exist" in response.content.decode()
