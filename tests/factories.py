"""One factory per model, for rows written straight to the database (the API under test writes its
own), and the wire payloads tests send."""

from __future__ import annotations

import copy
from typing import Any

import factory

from agents.models import AgentDefinition
from chat.chat_apps.models import ChatApp
from chat.sessions.models import ChatMessage, ChatSession
from directives.models import SemanticDirective
from directives.scopes import parse_scope
from tags.models import TagDefinition, TagStatus, UsageMode
from tools.models import ExecutionType, LifecycleStatus, ToolDefinition


def function(name: str, parameters: dict[str, Any] | None = None, description: str | None = None) -> dict[str, Any]:
    """A FunctionDefinition as a tool's functionSchema holds it; parameters are ParameterDefinitions."""
    return {"name": name, "description": description or f"{name} does its job", "parameters": copy.deepcopy(parameters or {})}


ADD_FUNCTION: dict[str, Any] = function(
    "add",
    {
        "a": {"description": "First", "type": "number", "required": True},
        "b": {"description": "Second", "type": "number", "required": True},
    },
    "Adds two numbers",
)
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


class ToolDefinitionFactory(factory.django.DjangoModelFactory):
    """An active inline tool that really runs: `add(a, b)` answers `{sum}`."""

    class Meta:
        model = ToolDefinition

    tool_id = factory.Sequence(lambda n: f"tool-{n}@1")
    execution_type = ExecutionType.INLINE
    name = factory.LazyAttribute(lambda tool: tool.tool_id.split("@")[0])
    display_name = factory.LazyAttribute(lambda tool: tool.name.title())
    description = "A tool for tests."
    supported_agent_frameworks = factory.LazyFunction(lambda: ["hosted"])
    version = factory.LazyAttribute(lambda tool: int(tool.tool_id.split("@")[1]))
    function_schema = factory.LazyFunction(lambda: [copy.deepcopy(ADD_FUNCTION)])
    code = "(event, params) => ({ sum: params.a + params.b })"
    execution_timeout = 5
    lifecycle_status = LifecycleStatus.ACTIVE
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


class ChatAppFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatApp

    chat_app_id = factory.Sequence(lambda n: f"app-{n}")
    title = factory.LazyAttribute(lambda app: f"Chat app {app.chat_app_id}")
    agent = factory.SubFactory(AgentFactory)
    enabled = True


class ChatSessionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatSession

    user_id = "alice"
    chat_app_id = "support"
    agent_id = "helper"


class ChatMessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ChatMessage

    session = factory.SubFactory(ChatSessionFactory)
    user_id = factory.LazyAttribute(lambda m: m.session.user_id)
    source = "user"
    message = factory.Sequence(lambda n: f"message {n}")
    # A straight branch by default: each message follows the session's latest one (docs/api.md, "Branches").
    parent = factory.LazyAttribute(lambda m: ChatMessage.objects.filter(session=m.session).order_by("-timestamp", "-message_id").first())


class SemanticDirectiveFactory(factory.django.DjangoModelFactory):
    """A directive stored directly; `scope` decides scopeType and scopeValue as the service would."""

    class Meta:
        model = SemanticDirective

    scope = factory.Sequence(lambda n: f"chatapp#app-{n}")
    scope_type = factory.LazyAttribute(lambda o: parse_scope(o.scope).scope_type)
    scope_value = factory.LazyAttribute(lambda o: parse_scope(o.scope).scope_value)
    directive_id = factory.Sequence(lambda n: f"directive-{n}")
    description = factory.LazyAttribute(lambda o: f"when {o.directive_id} applies")
    instructions = factory.LazyAttribute(lambda o: f"Do what {o.directive_id} says.")
    created_by = "alice"
    last_updated_by = factory.LazyAttribute(lambda o: o.created_by)


class TagDefinitionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TagDefinition

    scope = "demo"
    tag = factory.Sequence(lambda n: f"tag-{n:04d}")
    usage_mode = UsageMode.GLOBAL
    widget = factory.LazyFunction(lambda: {"type": "built-in", "builtInType": "chart"})
    llm_instructions_md = factory.LazyAttribute(lambda o: f"Emit <{o.scope}.{o.tag}> with chart JSON.")
    status = TagStatus.ENABLED
    rendering_contexts = factory.LazyFunction(lambda: {"inline": {"enabled": True}})
    can_be_generated_by_llm = True
    can_be_generated_by_tool = False
    description = factory.LazyAttribute(lambda o: f"The {o.tag} tag")
    created_by = "seed"
    last_updated_by = "seed"


def _overridden(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `base` with `overrides` applied; a None override removes the key."""
    data = copy.deepcopy(base)
    for key, value in overrides.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


_TAG_PAYLOAD: dict[str, Any] = {
    "scope": "demo",
    "tag": "chart",
    "usageMode": "global",
    "widget": {"type": "built-in", "builtInType": "chart"},
    "llmInstructionsMd": "Put chart JSON inside <demo.chart>.",
    "status": "enabled",
    "renderingContexts": {"inline": {"enabled": True}},
    "canBeGeneratedByLlm": True,
    "canBeGeneratedByTool": False,
    "description": "Charts in replies",
}


def tag_payload(**overrides: Any) -> dict[str, Any]:
    """A valid current-form TagDefinition on the wire; a None override removes the key."""
    return _overridden(_TAG_PAYLOAD, overrides)


def web_component(**component: Any) -> dict[str, Any]:
    return {"type": "web-component", "webComponent": component}


def tool_payload(execution_type: str = "inline", **overrides: Any) -> dict[str, Any]:
    """A valid create payload (the API's wire shape) of the given execution type."""
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
