"""Tools inside a turn, through converse (docs/api.md, "Tools in a turn"): the model asks, the tool runs, its result goes
back to the model, the call is traced on the message and streamed with the traces feature."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentDefinition
from chat.chat_apps.models import ChatApp
from chat.sessions.models import ChatMessage
from tests.converse.helpers import converse, converse_sse
from tests.factories import ADD_FUNCTION, TagDefinitionFactory, ToolDefinitionFactory
from tests.peers import Reply, ToolCall
from tests.peers.mcp_server import shared_mcp_peer
from tools.models import ExecutionType

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


async def test_a_chat_user_sees_that_a_tool_failed_not_its_internal_server_or_reply(app, async_client_for, openai_server):
    """The traces a chat user reads (streamed, and the session's messages) say which tool failed and
    how; its server's address and error reply are for operators (docs/api.md, "Events")."""
    peer = shared_mcp_peer()
    peer.reset()
    failing = {
        "name": "fail",
        "description": "Fails",
        "parameters": {"message": {"description": "Why", "type": "string", "required": True}},
    }
    await sync_to_async(ToolDefinitionFactory)(
        tool_id="inventory@1", execution_type=ExecutionType.MCP, code="", url=peer.url, auth=peer.auth(), function_schema=[failing]
    )
    await sync_to_async(ToolDefinitionFactory)(
        tool_id="ledger@1", execution_type=ExecutionType.MCP, code="", url="http://127.0.0.1:9/mcp/internal", function_schema=[ADD_FUNCTION]
    )
    await AgentDefinition.objects.filter(pk="helper").aupdate(tool_ids=["inventory@1", "ledger@1"])
    await ChatApp.objects.filter(pk="support").aupdate(features={"traces": {"enabled": True}})
    upstream_reply = "SQL error at db-7.internal:5432: relation stock_secret does not exist"
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("fail", {"message": upstream_reply}, id="a"), ToolCall("add", {"a": 1, "b": 2}, id="b")]),
            Reply(text="Sorry."),
        ]
    )

    _, events = await converse_sse(async_client_for("alice"))
    session_id = dict(events)["done"]["sessionId"]
    theirs = (await async_client_for("alice").request("GET", f"/api/chat/sessions/{session_id}/messages")).json()
    operators = (await async_client_for("root", admin=True).request("GET", f"/api/chat-admin/sessions/{session_id}/messages")).json()

    streamed = [data for name, data in events if name == "trace" and data.get("stage") == "tool"]
    stored = [trace for message in theirs["messages"] for trace in message.get("traces", []) if trace["stage"] == "tool"]
    for shown in (streamed, stored):
        assert sorted((trace["function"], trace["outcome"], trace["error"]) for trace in shown) == [
            ("add", "error", "failed: the reason is kept for the operators"),
            ("fail", "error", "failed: the reason is kept for the operators"),
        ]
    assert "127.0.0.1" not in json.dumps([events, theirs])  # the internal server's address, in no field
    kept = {
        trace["function"]: trace["error"]
        for message in operators["messages"]
        for trace in message.get("traces", [])
        if trace["stage"] == "tool"
    }
    assert upstream_reply in kept["fail"] and "http://127.0.0.1:9" in kept["add"]
