"""Tool definitions for tests: stored ones (factory-boy) and request payloads (plain dicts)."""

from __future__ import annotations

import copy
from typing import Any

import factory

from tools.models import ExecutionType, ToolDefinition

WEATHER_FUNCTION: dict[str, Any] = {
    "name": "get_weather",
    "description": "The weather forecast for a city",
    "parameters": {
        "city": {"description": "City name", "type": "string", "required": True},
        "unit": {"description": "Temperature unit", "type": "string", "required": False, "enum": ["celsius", "fahrenheit"]},
        "days": {
            "description": "Forecast days",
            "type": "array",
            "required": False,
            "items": {"description": "day", "type": "number", "required": True},
        },
        "options": {
            "description": "Extra options",
            "type": "object",
            "required": False,
            "properties": {"detailed": {"description": "More detail", "type": "boolean", "required": False}},
        },
    },
}
INLINE_CODE = "async (event, params) => ({ city: params.city, temperature: 21 })"


def tool_payload(execution_type: str = "inline", **overrides: Any) -> dict[str, Any]:
    """A valid create payload (SPEC.md wire shape) of the given execution type."""
    payload: dict[str, Any] = {
        "toolId": "weather@1",
        "executionType": execution_type,
        "name": "weather",
        "displayName": "Weather",
        "description": "Looks up the weather forecast",
        "supportedAgentFrameworks": ["hosted"],
        "functionSchema": [copy.deepcopy(WEATHER_FUNCTION)],
    }
    if execution_type == "inline":
        payload["code"] = INLINE_CODE
    elif execution_type == "function":
        payload["functionArn"] = "local:echo"
    elif execution_type == "mcp":
        payload["url"] = "https://mcp.example.com/mcp"
    payload.update(overrides)
    return payload


class ToolDefinitionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolDefinition

    tool_id = factory.Sequence(lambda n: f"tool-{n}@1")
    execution_type = ExecutionType.INLINE
    name = factory.LazyAttribute(lambda tool: tool.tool_id.split("@")[0])
    display_name = "A tool"
    description = "Does something useful"
    supported_agent_frameworks = factory.LazyFunction(lambda: ["hosted"])
    version = factory.LazyAttribute(lambda tool: int(tool.tool_id.split("@")[1]))
    function_schema = factory.LazyFunction(lambda: [copy.deepcopy(WEATHER_FUNCTION)])
    code = INLINE_CODE
    created_by = "seed"
    last_modified_by = "seed"
