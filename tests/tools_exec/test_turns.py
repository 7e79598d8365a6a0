"""Whole model turns (chatplatform.llm.stream_reply against the scripted OpenAI-compatible server)
with the toolset: each tool type's result reaches the next model request and the final answer."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from chatplatform import llm
from tests.factories import ADD_FUNCTION, ToolDefinitionFactory, function
from tests.peers import OpenAIServer, Reply, ToolCall
from tests.peers.mcp_server import McpPeer
from tests.tools_exec.support import EVENT_BASE, USER, create_lambda
from tools.models import ExecutionType, ToolDefinition
from tools.registry import agent_function
from tools.toolset import Toolset, toolset_for

pytestmark = pytest.mark.django_db

MODEL = "openai:test-model"
PAIR = {
    "a": {"description": "First", "type": "number", "required": True},
    "b": {"description": "Second", "type": "number", "required": True},
}


@agent_function(name="tools_exec_multiply", tags={"agent-tool": "true"})
def multiply(event: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    return {"product": params["a"] * params["b"]}


@agent_function(name="tools_exec_nap", tags={"agent-tool": "true"})
def nap(event: dict[str, Any], params: dict[str, Any]) -> str:
    time.sleep(params["seconds"])  # blocking on purpose: it must not hold up the event loop
    return "rested"


def offer(*tools: ToolDefinition) -> Toolset:
    return toolset_for(agent_tool_ids=[tool.tool_id for tool in tools], tool_overrides=None, user=USER, event_base=EVENT_BASE)


def turn(toolset: Toolset, message: str = "Please compute.") -> list[llm.ReplyEvent]:
    async def collect() -> list[llm.ReplyEvent]:
        events = llm.stream_reply(model=MODEL, system_prompt="You use tools.", history=[], message=message, tools=toolset.specs)
        return [event async for event in events]

    return async_to_sync(collect)()


def tool_messages(request: dict[str, Any]) -> dict[str, str]:
    return {message["tool_call_id"]: message["content"] for message in request["messages"] if message["role"] == "tool"}


def inline_tool() -> ToolDefinition:
    return ToolDefinitionFactory(
        code="async (event, params) => ({ product: params.a * params.b })", function_schema=[function("multiply", PAIR)]
    )


def tool_of_kind(kind: str, request: pytest.FixtureRequest) -> ToolDefinition:
    if kind == "inline":
        return inline_tool()
    if kind == "local-function":
        return ToolDefinitionFactory(
            execution_type=ExecutionType.FUNCTION,
            code="",
            function_arn="local:tools_exec_multiply",
            function_schema=[function("multiply", PAIR)],
        )
    if kind == "mcp":
        # The peer's `add` tool, offered under its own name.
        mcp_peer = request.getfixturevalue("mcp_peer")
        return ToolDefinitionFactory(
            execution_type=ExecutionType.MCP, code="", url=mcp_peer.url, auth=mcp_peer.auth(), function_schema=[ADD_FUNCTION]
        )
    aws = request.getfixturevalue("aws")
    return ToolDefinitionFactory(
        execution_type=ExecutionType.FUNCTION,
        code="",
        function_arn=create_lambda(aws, "multiply"),
        function_schema=[function("multiply", PAIR)],
    )


@pytest.mark.parametrize(
    ("kind", "function_name", "expected"),
    [
        ("inline", "multiply", {"product": 42}),
        ("local-function", "multiply", {"product": 42}),
        ("mcp", "add", {"result": 13.0}),
        ("aws-lambda", "multiply", None),  # moto without Docker echoes the payload: the event comes back
    ],
)
def test_the_model_asks_for_a_tool_and_its_result_reaches_the_next_request_and_the_answer(
    request: pytest.FixtureRequest, openai_server: OpenAIServer, kind: str, function_name: str, expected: Any
) -> None:
    tool = tool_of_kind(kind, request)
    toolset = offer(tool)
    openai_server.script([Reply(tool_calls=[ToolCall(function_name, {"a": 6, "b": 7}, id="call_1")]), Reply(text="The answer is ready.")])

    events = turn(toolset)

    if expected is None:  # the event itself (docs/api.md, "Tools in a turn")
        expected = {"toolId": tool.tool_id, "function": "multiply", "parameters": {"a": 6, "b": 7}, **EVENT_BASE}
    first, second = openai_server.requests
    assert [offered["function"]["name"] for offered in first["tools"]] == [function_name]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assert json.loads(tool_messages(second)["call_1"]) == expected
    result = next(event for event in events if isinstance(event, llm.ToolResultEvent))
    assert (result.result, result.error) == (expected, None)
    assert events[-1].text == "The answer is ready."
    (trace,) = toolset.traces
    assert (trace.tool_id, trace.function, trace.arguments, trace.outcome) == (tool.tool_id, function_name, {"a": 6, "b": 7}, "ok")


def test_arguments_that_break_the_schema_go_back_to_the_model_as_the_tools_error(openai_server: OpenAIServer) -> None:
    toolset = offer(inline_tool())
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("multiply", {"a": "six"}, id="bad")]),
            Reply(tool_calls=[ToolCall("multiply", {"a": 6, "b": 7}, id="good")]),
            Reply(text="42, after a correction."),
        ]
    )

    events = turn(toolset)

    refusal = tool_messages(openai_server.requests[1])["bad"]
    assert "invalid arguments for multiply" in refusal
    assert "argument 'a': must be a number, got a string" in refusal
    assert "argument 'b': is required" in refusal
    assert json.loads(tool_messages(openai_server.requests[2])["good"]) == {"product": 42}
    assert events[-1].text == "42, after a correction."
    assert [trace.outcome for trace in toolset.traces] == ["error", "ok"]


def test_an_endless_inline_loop_times_out_and_the_turn_still_answers(openai_server: OpenAIServer) -> None:
    spin = ToolDefinitionFactory(code="() => { while (true) {} }", execution_timeout=0.3, function_schema=[function("spin")])
    openai_server.script([Reply(tool_calls=[ToolCall("spin", {}, id="spin_1")]), Reply(text="That tool hung; sorry.")])
    started = time.perf_counter()

    events = turn(offer(spin))

    assert time.perf_counter() - started < 2
    assert "0.3 s" in tool_messages(openai_server.requests[1])["spin_1"]
    assert "executionTimeout" in tool_messages(openai_server.requests[1])["spin_1"]
    assert events[-1].text == "That tool hung; sorry."


def test_two_tool_calls_of_one_response_run_at_the_same_time(openai_server: OpenAIServer, mcp_peer: McpPeer) -> None:
    seconds = 0.8
    remote = ToolDefinitionFactory(
        execution_type=ExecutionType.MCP,
        code="",
        url=mcp_peer.url,
        auth=mcp_peer.auth(),
        function_schema=[function("slow", {"seconds": {"description": "s", "type": "number", "required": True}})],
    )
    local = ToolDefinitionFactory(
        execution_type=ExecutionType.FUNCTION,
        code="",
        function_arn="local:tools_exec_nap",
        function_schema=[function("nap", {"seconds": {"description": "s", "type": "number", "required": True}})],
    )
    toolset = offer(remote, local)
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("slow", {"seconds": seconds}, id="mcp"), ToolCall("nap", {"seconds": seconds}, id="local")]),
            Reply(text="Both done."),
        ]
    )

    async def warm_then_turn() -> tuple[float, list[llm.ReplyEvent]]:
        # The MCP token and session are made first, in this same event loop (sessions are per
        # loop), and the model client is built (importing the SDK takes most of a second): they
        # are not what is measured.
        await toolset.specs[0].call({"seconds": 0})
        llm.preload([MODEL])
        started = time.perf_counter()
        stream = llm.stream_reply(model=MODEL, system_prompt="You use tools.", history=[], message="Please compute.", tools=toolset.specs)
        events = [event async for event in stream]
        return time.perf_counter() - started, events

    elapsed, events = async_to_sync(warm_then_turn)()
    # One after the other, the two sleeps alone would take 2 × seconds, whatever the machine's load;
    # together, the turn's other work has `seconds` to fit in (it took 0.25 s on a loaded CI run).
    assert elapsed < 2 * seconds, f"the two {seconds} s calls took {elapsed:.3f} s together"
    results = {event.call_id: event for event in events if isinstance(event, llm.ToolResultEvent)}
    assert results["mcp"].result == {"result": f"slept {seconds}"} and results["local"].result == "rested"
    assert events[-1].text == "Both done."
