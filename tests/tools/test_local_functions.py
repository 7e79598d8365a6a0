"""The local function registry and the functions shipped with it (called as the executor will:
`func(event, params)`), the selectors the agents app uses, and the listing command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from tests.factories import WEATHER_FUNCTION, ToolDefinitionFactory
from tools.registry import agent_function, get_function, registered_functions, unregister
from tools.selectors import function_names, tools_by_ids


def call(name: str, params: dict[str, Any], **event: Any) -> Any:
    function = get_function(name)
    assert function is not None and function.is_agent_tool
    return function.func({"parameters": params, **event}, params)


def test_the_shipped_functions_are_registered_at_startup_and_tagged() -> None:
    names = {function.name for function in registered_functions() if function.is_agent_tool}

    assert {"current_time", "calculator", "echo"} <= names
    assert get_function("calculator").function_definition()["parameters"]["expression"]["type"] == "string"


def test_current_time_answers_in_the_requested_timezone() -> None:
    result = call("current_time", {"timezone": "Asia/Tokyo"})

    assert result["timezone"] == "Asia/Tokyo"
    assert datetime.fromisoformat(result["iso"]).utcoffset().total_seconds() == 9 * 3600


def test_current_time_falls_back_to_the_users_timezone_then_utc() -> None:
    assert call("current_time", {}, timezone="America/New_York")["timezone"] == "America/New_York"
    assert call("current_time", {})["timezone"] == "UTC"


def test_current_time_refuses_an_unknown_timezone() -> None:
    with pytest.raises(ValueError, match="unknown timezone"):
        call("current_time", {"timezone": "Mars/Olympus"})


@pytest.mark.parametrize(
    ("expression", "result"),
    [
        ("(2 + 3) * 4", 20),
        ("7 / 2", 3.5),
        ("7 // 2", 3),
        ("-2 ** 2", -4),
        ("2 ** 10 % 1000", 24),
        ("round(sqrt(2) * 100)", 141),
        ("max(1, pi)", 3.141592653589793),
    ],
)
def test_calculator_evaluates_arithmetic(expression: str, result: float) -> None:
    assert call("calculator", {"expression": expression}) == {"expression": expression, "result": result}


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "unsupported element"),
        ("(1).__class__", "unsupported element"),
        ("open('/etc/passwd')", "unsupported element"),
        ("x + 1", "unsupported element"),
        ("'a' * 3", "unsupported element"),
        ("9 ** 9 ** 9", "exponent must be at most"),
        ("(10 ** 999) ** 999", "result is too large"),
        ("1 / 0", "division by zero"),
        ("2 +", "not an arithmetic expression"),
        ("", "expression is required"),
        ("1" * 501, "at most 500 characters"),
    ],
)
def test_calculator_refuses_anything_but_bounded_arithmetic(expression: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call("calculator", {"expression": expression})


def test_echo_returns_its_text() -> None:
    assert call("echo", {"text": "hello"}) == {"text": "hello"}


@pytest.fixture
def scratch_names() -> Iterator[list[str]]:
    names: list[str] = []
    yield names
    for name in names:
        unregister(name)


def test_the_decorator_registers_async_functions_with_their_tags(scratch_names: list[str]) -> None:
    scratch_names.append("scratch_async")

    @agent_function(name="scratch_async", tags={"agent-tool": "true", "team": "x"}, description="Async one")
    async def scratch(event: dict[str, Any], params: dict[str, Any]) -> int:
        return 7

    registered = get_function("scratch_async")
    assert registered is not None
    assert registered.is_async and registered.is_agent_tool
    assert registered.tags == {"agent-tool": "true", "team": "x"}
    assert registered.function_arn == "local:scratch_async"
    assert asyncio.run(registered.func({}, {})) == 7


def test_registering_another_callable_under_a_taken_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="already registered"):

        @agent_function(name="echo", tags={"agent-tool": "true"})
        def impostor(event: dict[str, Any], params: dict[str, Any]) -> None:
            return None

    assert get_function("echo").func.__name__ == "echo"


def test_a_name_that_cannot_follow_local_is_an_error() -> None:
    with pytest.raises(ValueError, match="must match"):
        agent_function(name="has space")(lambda event, params: None)


def test_an_unknown_name_is_not_found() -> None:
    assert get_function("no_such_function") is None


@pytest.mark.django_db
def test_tools_by_ids_returns_the_stored_tools_by_id() -> None:
    ToolDefinitionFactory(tool_id="a@1")
    ToolDefinitionFactory(tool_id="b@1")

    found = tools_by_ids(["a@1", "missing@1", "a@1"])

    assert list(found) == ["a@1"]
    assert found["a@1"].tool_id == "a@1"


@pytest.mark.django_db
def test_function_names_lists_the_functions_of_a_tool() -> None:
    tool = ToolDefinitionFactory(function_schema=[WEATHER_FUNCTION, {**WEATHER_FUNCTION, "name": "get_alerts"}])

    assert function_names(tool) == ["get_weather", "get_alerts"]


def test_the_listing_command_prints_the_local_functions() -> None:
    out = StringIO()
    call_command("list_local_functions", "--json", stdout=out)

    rows = {row["functionArn"]: row for row in json.loads(out.getvalue())}
    assert rows["local:calculator"]["agentTool"] is True
    assert rows["local:echo"]["function"]["name"] == "echo"

    plain = StringIO()
    call_command("list_local_functions", stdout=plain)
    assert "local:current_time" in plain.getvalue()
