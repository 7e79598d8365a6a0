"""Tools inside a turn (issue 5 through converse): the model asks, the tool runs, its result goes
back to the model, the call is traced on the message and streamed with the traces feature."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentDefinition
from chat.chat_apps.models import ChatApp
from chat.sessions.models import ChatMessage
from tests.converse.helpers import converse, converse_sse
from tests.factories import TagDefinitionFactory, ToolDefinitionFactory
from tests.peers import Reply, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def adder(app):
    """The agent of `app` gets an inline tool whose function `add` sums two numbers."""
    tool = ToolDefinitionFactory(tool_id="adder@1")
    AgentDefinition.objects.filter(pk="helper").update(tool_ids=[tool.tool_id])
    return tool


def tool_messages(request_body):
    return [message for message in request_body["messages"] if message["role"] == "tool"]


async def test_a_tool_the_model_asks_for_runs_and_its_result_reaches_the_next_model_request(adder, async_client_for, openai_server):
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})]), Reply(text="2 + 3 = 5.")])

    response = await converse(async_client_for("alice"))

    assert response.status_code == 200, response.json()
    assert response.json()["response"] == "2 + 3 = 5."
    first, second = openai_server.requests
    assert [tool["function"]["name"] for tool in first["tools"]] == ["add"]
    assert json.loads(tool_messages(second)[0]["content"]) == {"sum": 5}
    message = await ChatMessage.objects.aget(pk=response.json()["messageId"])
    tool_traces = [trace for trace in message.traces if trace["stage"] == "tool"]
    assert tool_traces == [
        {"stage": "tool", "toolId": "adder@1", "function": "add", "arguments": {"a": 2, "b": 3}, "durationMs": tool_traces[0]["durationMs"],
         "outcome": "ok", "result": {"sum": 5}}
    ]  # fmt: skip


async def test_bad_arguments_go_back_to_the_model_and_the_turn_still_answers(adder, async_client_for, openai_server):
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": "two", "b": 3})]), Reply(text="Sorry.")])

    response = await converse(async_client_for("alice"))

    assert response.json()["response"] == "Sorry."
    assert "a" in tool_messages(openai_server.requests[1])[0]["content"]
    message = await ChatMessage.objects.aget(pk=response.json()["messageId"])
    assert [trace["outcome"] for trace in message.traces if trace["stage"] == "tool"] == ["error"]


async def test_tool_calls_stream_as_trace_events_with_the_traces_feature(adder, async_client_for, openai_server):
    await ChatApp.objects.filter(pk="support").aupdate(features={"traces": {"enabled": True}})
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 1})]), Reply(text="2.")])

    _, events = await converse_sse(async_client_for("alice"))

    tool_events = [data for name, data in events if name == "trace" and data.get("stage") == "tool"]
    assert [(event["function"], event["outcome"], event["result"]) for event in tool_events] == [("add", "ok", {"sum": 2})]


async def test_a_retired_tool_is_not_offered(adder, async_client_for, openai_server):
    from tools.models import ToolDefinition

    await ToolDefinition.objects.filter(pk="adder@1").aupdate(lifecycle_status="retired")
    openai_server.script([Reply(text="No tools today.")])

    await converse(async_client_for("alice"))

    assert "tools" not in openai_server.requests[0]


@pytest.fixture
def tag_tool(app, settings):
    """Tags on site-wide and in `app`; `ui.chart` may come from tools, `ui.secret` may not; the
    agent's tool returns text holding both."""
    settings.CHAT_SITE_FEATURES = {"tags": {"enabled": True}}
    ChatApp.objects.filter(pk="support").update(features={"tags": {"enabled": True}})
    TagDefinitionFactory(scope="ui", tag="chart", can_be_generated_by_tool=True)
    TagDefinitionFactory(scope="ui", tag="secret", can_be_generated_by_tool=False)
    code = """(event, params) => 'Here: <ui.chart>{"v": [1, 2]}</ui.chart> and <ui.secret x="1">hidden</ui.secret><ui.secret/>'"""
    tool = ToolDefinitionFactory(
        tool_id="widgets@1", code=code, function_schema=[{"name": "widgets", "description": "Widgets", "parameters": {}}]
    )
    AgentDefinition.objects.filter(pk="helper").update(tool_ids=[tool.tool_id])


async def test_tags_a_tool_may_emit_pass_through_and_others_are_stripped(tag_tool, async_client_for, openai_server):
    openai_server.script([Reply(tool_calls=[ToolCall("widgets", {})]), Reply(text="Done.")])

    response = await converse(async_client_for("alice"))

    assert response.status_code == 200, response.json()
    result = tool_messages(openai_server.requests[1])[0]["content"]  # a string result goes as text
    assert result == 'Here: <ui.chart>{"v": [1, 2]}</ui.chart> and hidden'


async def test_with_tags_off_for_the_chat_app_no_tag_from_a_tool_passes(tag_tool, async_client_for, openai_server):
    await ChatApp.objects.filter(pk="support").aupdate(features={})
    openai_server.script([Reply(tool_calls=[ToolCall("widgets", {})]), Reply(text="Done.")])

    await converse(async_client_for("alice"))

    assert tool_messages(openai_server.requests[1])[0]["content"] == 'Here: {"v": [1, 2]} and hidden'
