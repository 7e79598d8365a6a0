"""`function` tools: `local:` registry functions and AWS Lambda functions (moto, no Docker)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import pytest
import requests
from asgiref.sync import async_to_sync
from rest_framework.test import APIClient

from tests.factories import ToolDefinitionFactory, function
from tests.tools_exec.support import EVENT_BASE, REGION, USER, create_lambda
from tools.executors import ToolError
from tools.models import ExecutionType, ToolDefinition
from tools.registry import agent_function, unregister
from tools.toolset import Toolset, toolset_for

pytestmark = pytest.mark.django_db

TEXT = {"text": {"description": "Some text", "type": "string", "required": True}}
threads: list[str] = []


@agent_function(name="tools_exec_shout", tags={"agent-tool": "true"})
def shout(event: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    threads.append(threading.current_thread().name)
    return {"text": params["text"].upper(), "user": event["userId"]}


@agent_function(name="tools_exec_whisper", tags={"agent-tool": "true"})
async def whisper(event: dict[str, Any], params: dict[str, Any]) -> str:
    await asyncio.sleep(0)
    return params["text"].lower()


@agent_function(name="tools_exec_reject", tags={"agent-tool": "true"})
def reject(event: dict[str, Any], params: dict[str, Any]) -> str:
    raise ValueError(f"cannot handle {params['text']!r}")


@agent_function(name="tools_exec_block", tags={"agent-tool": "true"})
def block(event: dict[str, Any], params: dict[str, Any]) -> str:
    time.sleep(float(params["text"]))
    return "done"


def local_tool(name: str, *, timeout: float = 5) -> ToolDefinition:
    return ToolDefinitionFactory(
        execution_type=ExecutionType.FUNCTION,
        code="",
        function_arn=f"local:{name}",
        execution_timeout=timeout,
        function_schema=[function("speak", TEXT)],
    )


def offer(tool: ToolDefinition) -> Toolset:
    return toolset_for(agent_tool_ids=[tool.tool_id], tool_overrides=None, user=USER, event_base=EVENT_BASE)


def call(tool: ToolDefinition, arguments: dict[str, Any]) -> Any:
    return async_to_sync(offer(tool).specs[0].call)(arguments)


def test_a_sync_local_function_runs_off_the_event_loop_and_returns_its_result() -> None:
    threads.clear()

    assert call(local_tool("tools_exec_shout"), {"text": "hi"}) == {"text": "HI", "user": "alice"}
    assert threads[0].startswith("function-tool")


def test_an_async_local_function_is_awaited() -> None:
    assert call(local_tool("tools_exec_whisper"), {"text": "QUIET"}) == "quiet"


def test_a_local_functions_exception_is_an_error_result() -> None:
    with pytest.raises(ToolError, match="ValueError: cannot handle 'x'"):
        call(local_tool("tools_exec_reject"), {"text": "x"})


def test_a_local_function_slower_than_the_timeout_is_a_timeout_result() -> None:
    started = time.perf_counter()

    with pytest.raises(ToolError) as raised:
        call(local_tool("tools_exec_block", timeout=0.2), {"text": "1"})

    assert time.perf_counter() - started < 0.9
    assert raised.value.outcome == "timeout"


def test_a_local_function_no_longer_registered_is_an_error_result() -> None:
    @agent_function(name="tools_exec_gone", tags={"agent-tool": "true"})
    def gone(event: dict[str, Any], params: dict[str, Any]) -> str:
        return "here"

    tool = local_tool("tools_exec_gone")
    unregister("tools_exec_gone")

    with pytest.raises(ToolError, match="no local function named 'tools_exec_gone' is registered"):
        call(tool, {"text": "x"})


# --- AWS Lambda ---------------------------------------------------------------------------------


def queue_lambda_result(result: str) -> None:
    """moto's documented way to script what the next invocation answers."""
    response = requests.post(
        "http://motoapi.amazonaws.com/moto-api/static/lambda-simple/response", json={"results": [result], "region": REGION}, timeout=5
    )
    assert response.status_code == 201


def lambda_tool(admin_client: APIClient, arn: str) -> ToolDefinition:
    payload = {
        "toolId": "lambda-weather@1",
        "executionType": "function",
        "name": "lambda-weather",
        "displayName": "Weather (Lambda)",
        "description": "The weather from a Lambda function",
        "supportedAgentFrameworks": ["hosted"],
        "functionSchema": [function("speak", TEXT)],
        "functionArn": arn,
    }
    # Through the Admin API, whose validation checks that the function exists and is tagged.
    response = admin_client.post("/api/chat-admin/tool", {"tool": payload, "userId": "root-admin"}, format="json")
    assert response.status_code == 200, response.json()
    return ToolDefinition.objects.get(pk="lambda-weather@1")


def test_a_lambda_function_is_invoked_with_the_event_as_its_payload(aws: Any, admin_client: APIClient) -> None:
    tool = lambda_tool(admin_client, create_lambda(aws, "weather"))

    result = call(tool, {"text": "Paris"})

    assert result == {
        "toolId": "lambda-weather@1",
        "function": "speak",
        "parameters": {"text": "Paris"},
        **EVENT_BASE,
    }


def test_what_the_lambda_function_answers_is_the_result(aws: Any, admin_client: APIClient) -> None:
    tool = lambda_tool(admin_client, create_lambda(aws, "forecast"))
    queue_lambda_result(json.dumps({"forecast": "sunny", "celsius": 21}))

    assert call(tool, {"text": "Paris"}) == {"forecast": "sunny", "celsius": 21}
