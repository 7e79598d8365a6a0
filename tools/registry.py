"""The registry of local Python functions a `function` tool may name as `local:<name>` (docs/api.md, "Tools").

It is the embedded stand-in for a serverless platform: a function registers with its tags, and
as for AWS Lambda only functions tagged `agent-tool` = true may back a tool. The registry is filled
at start-up (ToolsConfig.ready imports tools.functions); other apps register theirs the same way.

Calling convention (used by the executor): `func(event, params)`, sync or async, returning a
JSON-serialisable value. `event` holds toolId, function, parameters, userId, sessionId, chatAppId,
agentId, customData and timezone; `params` is `event["parameters"]`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

AGENT_TOOL_TAG = "agent-tool"
# The part after `local:`; dots allow namespacing (`billing.refund`).
LOCAL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def tag_is_true(tags: Mapping[str, Any] | None) -> bool:
    """The `agent-tool` rule shared with AWS Lambda: the tag's value is "true", in any case."""
    return str((tags or {}).get(AGENT_TOOL_TAG, "")).strip().lower() == "true"


@dataclass(frozen=True)
class LocalFunction:
    """A registered callable with its tags and the FunctionDefinition it offers (for seeding tools)."""

    name: str
    func: Callable[..., Any]
    tags: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.func)

    @property
    def is_agent_tool(self) -> bool:
        return tag_is_true(self.tags)

    @property
    def function_arn(self) -> str:
        return f"local:{self.name}"

    def function_definition(self) -> dict[str, Any]:
        """The FunctionDefinition for a tool's `functionSchema`."""
        return {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}


_functions: dict[str, LocalFunction] = {}


def agent_function(
    name: str | None = None,
    *,
    tags: Mapping[str, str] | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated callable as `local:<name>` (default: the callable's own name).

    Registering a different callable under a taken name is a programming error and raises
    ValueError; importing a module twice re-registers the same callable harmlessly.
    """

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        function_name = name or func.__name__
        if not LOCAL_NAME_PATTERN.fullmatch(function_name):
            raise ValueError(f"local function name {function_name!r} must match {LOCAL_NAME_PATTERN.pattern}")
        current = _functions.get(function_name)
        if current is not None and current.func.__qualname__ != func.__qualname__:
            raise ValueError(f"a local function named {function_name!r} is already registered ({current.func.__qualname__})")
        _functions[function_name] = LocalFunction(
            name=function_name,
            func=func,
            tags=MappingProxyType({str(k): str(v) for k, v in (tags or {}).items()}),
            description=description if description is not None else inspect.getdoc(func) or "",
            parameters=MappingProxyType(dict(parameters or {})),
        )
        return func

    return register


def get_function(name: str) -> LocalFunction | None:
    """The function registered as `local:<name>`, or None."""
    return _functions.get(name)


def unregister(name: str) -> None:
    """Remove a registration (tests, plugins being unloaded); unknown names are ignored."""
    _functions.pop(name, None)


def registered_functions() -> list[LocalFunction]:
    return sorted(_functions.values(), key=lambda function: function.name)
