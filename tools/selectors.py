"""Reads on tool definitions. The agents app imports `tools_by_ids` and `function_names`."""

from __future__ import annotations

from django.db.models import QuerySet

from tools.models import ToolDefinition


def tool_get(*, tool_id: str) -> ToolDefinition | None:
    return ToolDefinition.objects.filter(tool_id=tool_id).first()


def tools_search(*, tool_ids: list[str] | None) -> QuerySet[ToolDefinition]:
    """All tools, or those named, ordered by toolId (primary key index). Retired ones included."""
    tools = ToolDefinition.objects.order_by("tool_id")
    if tool_ids is not None:
        tools = tools.filter(tool_id__in=tool_ids)
    return tools


def tools_by_ids(tool_ids: list[str]) -> dict[str, ToolDefinition]:
    """The stored tools among `tool_ids`, by toolId; absent ids are simply missing from the result."""
    return {tool.tool_id: tool for tool in ToolDefinition.objects.filter(tool_id__in=set(tool_ids))}


def function_names(tool: ToolDefinition) -> list[str]:
    """The `name` of each FunctionDefinition of the tool's functionSchema, in order."""
    return [function["name"] for function in tool.function_schema or [] if isinstance(function, dict) and "name" in function]
