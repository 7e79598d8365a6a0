"""Which tools a turn offers, how their parameters reach the model, and what a call checks and records."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from tests.factories import ADD_FUNCTION, ToolDefinitionFactory, function
from tests.tools_exec.support import EVENT_BASE, USER
from tools.executors import ToolError
from tools.models import ExecutionType, LifecycleStatus
from tools.registry import agent_function
from tools.toolset import Toolset, toolset_for

pytestmark = pytest.mark.django_db

received: list[dict[str, Any]] = []


@agent_function(name="tools_exec_record", tags={"agent-tool": "true"})
def record_event(event: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    received.append(event)
    return {"ok": True}


@agent_function(name="tools_exec_big", tags={"agent-tool": "true"})
def big_result(event: dict[str, Any], params: dict[str, Any]) -> str:
    return "x" * int(params["size"])


@agent_function(name="tools_exec_sleep", tags={"agent-tool": "true"})
async def sleep_a_while(event: dict[str, Any], params: dict[str, Any]) -> str:
    await asyncio.sleep(float(params.get("seconds", 0)))
    return "awake"


@pytest.fixture(autouse=True)
def _forget_received() -> None:
    received.clear()


WEATHER = function(
    "get_weather",
    {
        "city": {"description": "City name", "type": "string", "required": True},
        "unit": {"description": "Temperature unit", "type": "string", "required": False, "enum": ["celsius", "fahrenheit"]},
        "days": {
            "description": "Forecast days",
            "type": "array",
            "required": False,
            "items": {"description": "A day offset", "type": "number", "required": True},
        },
        "options": {
            "description": "Extra options",
            "type": "object",
            "required": False,
            "properties": {
                "detailed": {"description": "More detail", "type": "boolean", "required": True},
                "lang": {"description": "Language", "type": "string", "required": False},
            },
        },
    },
    description="The weather forecast for a city",
)


def offer(*tool_ids: str, overrides: dict[str, str] | None = None, user: dict[str, Any] = USER) -> Toolset:
    return toolset_for(agent_tool_ids=list(tool_ids), tool_overrides=overrides, user=user, event_base=EVENT_BASE)


def call(toolset: Toolset, name: str, arguments: Any) -> Any:
    spec = next(spec for spec in toolset.specs if spec.name == name)
    return async_to_sync(spec.call)(arguments)


def recording_tool(**fields: Any) -> Any:
    return ToolDefinitionFactory(
        execution_type=ExecutionType.FUNCTION, code="", function_arn="local:tools_exec_record", function_schema=[WEATHER], **fields
    )


def test_every_function_of_every_tool_is_offered_with_its_parameters_as_json_schema() -> None:
    weather = ToolDefinitionFactory(function_schema=[WEATHER, ADD_FUNCTION])
    other = ToolDefinitionFactory(function_schema=[function("ping")])

    toolset = offer(weather.tool_id, other.tool_id)

    assert [spec.name for spec in toolset.specs] == ["get_weather", "add", "ping"]
    assert toolset.tool_ids == {"get_weather": weather.tool_id, "add": weather.tool_id, "ping": other.tool_id}
    spec = toolset.specs[0]
    assert spec.description == "The weather forecast for a city"
    assert spec.timeout is not None and spec.timeout >= weather.execution_timeout
    assert spec.parameters_json_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "description": "Temperature unit", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "array", "description": "Forecast days", "items": {"type": "number", "description": "A day offset"}},
            "options": {
                "type": "object",
                "description": "Extra options",
                "properties": {
                    "detailed": {"type": "boolean", "description": "More detail"},
                    "lang": {"type": "string", "description": "Language"},
                },
                "required": ["detailed"],
                "additionalProperties": False,
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert toolset.specs[2].parameters_json_schema == {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def test_retired_tools_are_not_offered_and_deprecated_ones_still_are() -> None:
    retired = ToolDefinitionFactory(lifecycle_status=LifecycleStatus.RETIRED, function_schema=[function("old")])
    deprecated = ToolDefinitionFactory(lifecycle_status=LifecycleStatus.DEPRECATED, function_schema=[function("aging")])

    toolset = offer(retired.tool_id, deprecated.tool_id, "never-stored@1")

    assert [spec.name for spec in toolset.specs] == ["aging"]
    assert toolset.skipped == {retired.tool_id: "retired", "never-stored@1": "missing"}


def test_a_tool_denied_by_its_access_rules_is_not_offered_to_that_user_but_is_to_others() -> None:
    rules = [
        {"condition": 'user.userType == "internal-user"', "effect": "allow", "order": 1},
        {"condition": 'customData.plan == "gold"', "effect": "deny", "order": 2},
        {"effect": "allow", "order": 3},
    ]
    guarded = ToolDefinitionFactory(access_rules=rules, function_schema=[function("internal_report")])

    external_gold = offer(guarded.tool_id)
    internal = offer(guarded.tool_id, user={**USER, "userType": "internal-user"})
    external_silver = offer(guarded.tool_id, user={**USER, "customData": {"plan": "silver"}})

    assert external_gold.specs == [] and external_gold.skipped == {guarded.tool_id: "denied by its access rules"}
    assert [spec.name for spec in internal.specs] == ["internal_report"]
    assert [spec.name for spec in external_silver.specs] == ["internal_report"]


def test_tool_overrides_swap_the_offered_tool() -> None:
    v1 = ToolDefinitionFactory(tool_id="lookup@1", code="() => 'one'", function_schema=[function("lookup")])
    v2 = ToolDefinitionFactory(tool_id="lookup@2", code="() => 'two'", function_schema=[function("lookup")])

    toolset = offer(v1.tool_id, overrides={v1.tool_id: v2.tool_id})

    assert toolset.tool_ids == {"lookup": v2.tool_id}
    assert call(toolset, "lookup", {}) == "two"
    assert toolset.traces[0].tool_id == "lookup@2"


def test_a_function_name_already_offered_by_another_tool_is_not_offered_twice() -> None:
    first = ToolDefinitionFactory(code="() => 'first'", function_schema=[function("lookup")])
    second = ToolDefinitionFactory(code="() => 'second'", function_schema=[function("lookup")])

    toolset = offer(first.tool_id, second.tool_id)

    assert [spec.name for spec in toolset.specs] == ["lookup"]
    assert call(toolset, "lookup", {}) == "first"
    assert toolset.skipped == {second.tool_id: f"function lookup is already offered by {first.tool_id}"}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "argument 'city': is required"),
        ({"city": 7}, "argument 'city': must be a string, got a number"),
        ({"city": "Oslo", "unit": "kelvin"}, 'argument \'unit\': must be one of "celsius", "fahrenheit", got "kelvin"'),
        ({"city": "Oslo", "days": [1, "two"]}, "argument 'days[1]': must be a number, got a string"),
        ({"city": "Oslo", "options": {}}, "argument 'options.detailed': is required"),
        ({"city": "Oslo", "options": {"detailed": True, "x": 1}}, "argument 'options.x': is not a parameter of 'options'"),
        ({"city": "Oslo", "country": "NO"}, "argument 'country': is not a parameter of get_weather (allowed: city, days, options, unit)"),
        ({"city": True}, "argument 'city': must be a string, got a boolean"),
    ],
)
def test_arguments_that_break_the_schema_are_refused_before_anything_runs(arguments: dict[str, Any], message: str) -> None:
    tool = recording_tool()
    toolset = offer(tool.tool_id)

    with pytest.raises(ToolError) as raised:
        call(toolset, "get_weather", arguments)

    assert message in str(raised.value)
    assert str(raised.value).startswith("invalid arguments for get_weather: ")
    assert received == []
    (trace,) = toolset.traces
    assert (trace.outcome, trace.arguments) == ("error", arguments)


def test_every_broken_rule_is_named_at_once() -> None:
    toolset = offer(recording_tool().tool_id)

    with pytest.raises(ToolError) as raised:
        call(toolset, "get_weather", {"unit": "kelvin", "extra": 1})

    text = str(raised.value)
    assert "argument 'city': is required" in text
    assert "argument 'unit': must be one of" in text
    assert "argument 'extra': is not a parameter" in text


def test_null_for_an_optional_parameter_counts_as_absent_but_not_for_a_required_one() -> None:
    toolset = offer(recording_tool().tool_id)

    assert call(toolset, "get_weather", {"city": "Oslo", "unit": None, "options": None}) == {"ok": True}
    assert received[0]["parameters"] == {"city": "Oslo"}
    with pytest.raises(ToolError, match="argument 'city': must be a string, got null"):
        call(toolset, "get_weather", {"city": None})


def test_the_executor_receives_the_contract_event() -> None:
    tool = recording_tool()
    toolset = offer(tool.tool_id)

    call(toolset, "get_weather", {"city": "Oslo", "days": [0, 1]})

    assert received == [
        {
            "toolId": tool.tool_id,
            "function": "get_weather",
            "parameters": {"city": "Oslo", "days": [0, 1]},
            "userId": "alice",
            "sessionId": "session-1",
            "chatAppId": "support",
            "agentId": "helper",
            "customData": {"accountId": "acme", "plan": "gold"},
            "timezone": "Europe/Paris",
        }
    ]


def test_each_call_is_traced_with_tool_function_arguments_duration_and_outcome() -> None:
    ok = ToolDefinitionFactory(function_schema=[ADD_FUNCTION])
    failing = ToolDefinitionFactory(code="() => { throw new Error('no way') }", function_schema=[function("refuse")])
    seen: list[Any] = []
    toolset = toolset_for(
        agent_tool_ids=[ok.tool_id, failing.tool_id], tool_overrides=None, user=USER, event_base=EVENT_BASE, on_trace=seen.append
    )

    call(toolset, "add", {"a": 1, "b": 2})
    with pytest.raises(ToolError):
        call(toolset, "refuse", {})

    first, second = toolset.traces
    assert seen == [first, second]
    assert (first.tool_id, first.function, first.arguments, first.outcome, first.result, first.error) == (
        ok.tool_id,
        "add",
        {"a": 1, "b": 2},
        "ok",
        {"sum": 3},
        None,
    )
    assert first.duration_ms >= 0
    assert (second.function, second.outcome, second.result, second.error) == ("refuse", "error", None, "Error: no way")
    assert first.as_wire() == {
        "stage": "tool",
        "toolId": ok.tool_id,
        "function": "add",
        "arguments": {"a": 1, "b": 2},
        "durationMs": first.duration_ms,
        "outcome": "ok",
        "result": {"sum": 3},
    }
    assert second.as_wire()["error"] == "Error: no way" and "result" not in second.as_wire()


def test_traces_truncate_long_arguments_and_results(settings: Any) -> None:
    settings.CHAT_TOOL_TRACE_MAX_CHARS = 100
    tool = ToolDefinitionFactory(
        code="(event, params) => params.text.repeat(3)",
        function_schema=[function("triple", {"text": {"description": "t", "type": "string", "required": True}})],
    )
    toolset = offer(tool.tool_id)

    result = call(toolset, "triple", {"text": "abc" * 50})

    assert result == "abc" * 150  # the model gets the whole result; only the trace is cut
    (trace,) = toolset.traces
    full_arguments = json.dumps({"text": "abc" * 50})
    assert trace.arguments == f"{full_arguments[:100]}… ({len(full_arguments)} characters)"
    assert trace.result == f"{json.dumps('abc' * 150)[:100]}… (452 characters)"


def test_a_result_over_the_size_limit_is_an_error_result(settings: Any) -> None:
    settings.CHAT_TOOL_RESULT_MAX_BYTES = 2048
    sizes = function("sized", {"size": {"description": "bytes", "type": "number", "required": True}})
    local = ToolDefinitionFactory(
        execution_type=ExecutionType.FUNCTION, code="", function_arn="local:tools_exec_big", function_schema=[sizes]
    )
    toolset = offer(local.tool_id)

    assert call(toolset, "sized", {"size": 2000}) == "x" * 2000
    with pytest.raises(ToolError, match="the result is 3002 bytes of JSON, over the limit of 2048 bytes"):
        call(toolset, "sized", {"size": 3000})
    assert [trace.outcome for trace in toolset.traces] == ["ok", "error"]


def test_changing_an_offered_schema_changes_nothing_stored() -> None:
    tool = ToolDefinitionFactory(function_schema=[copy.deepcopy(WEATHER)])
    toolset = offer(tool.tool_id)

    toolset.specs[0].parameters_json_schema["properties"].clear()
    tool.refresh_from_db()

    assert tool.function_schema == [WEATHER]


def test_a_cancelled_call_is_traced_as_an_error() -> None:
    tool = ToolDefinitionFactory(
        execution_type=ExecutionType.FUNCTION,
        code="",
        function_arn="local:tools_exec_sleep",
        function_schema=[function("nap", {"seconds": {"description": "how long", "type": "number", "required": True}})],
    )
    toolset = offer(tool.tool_id)

    async def cancel_soon() -> None:
        task = asyncio.ensure_future(toolset.specs[0].call({"seconds": 5}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async_to_sync(cancel_soon)()

    (trace,) = toolset.traces
    assert trace.outcome == "error" and trace.error.startswith("cancelled")
