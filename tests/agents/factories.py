"""Rows for agent tests, written straight to the database (the API under test writes its own)."""

from __future__ import annotations

from typing import Any

import factory

from agents.models import AgentDefinition
from tools.models import ExecutionType, LifecycleStatus, ToolDefinition


def function(name: str) -> dict[str, Any]:
    """A FunctionDefinition as a tool's functionSchema holds it."""
    return {"name": name, "description": f"{name} does its job", "parameters": {}}


class ToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolDefinition

    tool_id = factory.Sequence(lambda n: f"tool{n}@1")
    execution_type = ExecutionType.INLINE
    name = factory.LazyAttribute(lambda tool: tool.tool_id.split("@")[0])
    display_name = factory.LazyAttribute(lambda tool: tool.name.title())
    description = "A tool for tests."
    supported_agent_frameworks = factory.LazyFunction(lambda: ["hosted"])
    function_schema = factory.LazyAttribute(lambda tool: [function(f"{tool.name}_run")])
    lifecycle_status = LifecycleStatus.ACTIVE
    code = "function fn(event, params) { return {ok: true}; }"
    created_by = "factory"
    last_modified_by = "factory"


class AgentFactory(factory.django.DjangoModelFactory):
    """An agent row at version 1 without history; create through the API when history matters."""

    class Meta:
        model = AgentDefinition

    agent_id = factory.Sequence(lambda n: f"agent-{n}")
    base_prompt = "You are a helpful assistant."
    tool_ids = factory.LazyFunction(list)
    created_by = "factory"
    last_modified_by = "factory"
