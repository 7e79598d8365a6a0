"""Directive scopes (docs/api.md, "Semantic directives"): the five forms, built and parsed here only.

    chatapp#<id>   agent#<id>   tool#<id>   entity#<value>   agent#<agentId>#entity#<value>

The only compound scope is agent followed by entity; anything else is refused. A part is a
non-empty string (or a number, written without a trailing `.0`) without `#`, so splitting a
scope on `#` always recovers its parts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from directives.models import SCOPE_PART_MAX_LENGTH, ScopeType

SIMPLE_TYPES = (ScopeType.CHATAPP, ScopeType.AGENT, ScopeType.TOOL, ScopeType.ENTITY)
FORMS_RULE = (
    "must be one of chatapp#<id>, agent#<id>, tool#<id>, entity#<value> or agent#<agentId>#entity#<value> "
    "(the only compound scope is agent followed by entity)"
)


class ScopeError(ValueError):
    """A scope that breaks a rule. `field` is the wire name at fault, relative to the directive."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class Scope:
    scope: str
    scope_type: str
    scope_value: str  # stored form; `<agentId>#<entity>` for agent-entity


def part_text(value: Any, *, field: str) -> str:
    """One scope part as text: a string, or a number rendered without a trailing `.0`."""
    if isinstance(value, bool):
        raise ScopeError(field, "must be a string or a number")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ScopeError(field, "must be a finite number")
        text = str(int(value)) if value.is_integer() else repr(value)
    elif isinstance(value, str):
        text = value
    else:
        raise ScopeError(field, "must be a string or a number")
    if not text.strip():
        raise ScopeError(field, "must not be empty")
    if "#" in text:
        raise ScopeError(field, "must not contain '#'")
    if len(text) > SCOPE_PART_MAX_LENGTH:
        raise ScopeError(field, f"must be at most {SCOPE_PART_MAX_LENGTH} characters")
    return text


def build_scope(scope_type: Any, scope_value: Any) -> Scope:
    """The scope of `scopeType` + `scopeValue` (`{agent, entity}` for agent-entity)."""
    if scope_type not in ScopeType.values:
        raise ScopeError("scopeType", f"must be one of {', '.join(ScopeType.values)}")
    if scope_type == ScopeType.AGENT_ENTITY:
        if not isinstance(scope_value, dict) or set(scope_value) != {"agent", "entity"}:
            raise ScopeError("scopeValue", "must be an object {agent, entity} for scopeType agent-entity")
        agent = part_text(scope_value["agent"], field="scopeValue.agent")
        entity = part_text(scope_value["entity"], field="scopeValue.entity")
        return Scope(f"agent#{agent}#entity#{entity}", ScopeType.AGENT_ENTITY.value, f"{agent}#{entity}")
    value = part_text(scope_value, field="scopeValue")
    return Scope(f"{scope_type}#{value}", str(scope_type), value)


def parse_scope(scope: Any, *, field: str = "scope") -> Scope:
    """A scope string split into scopeType and scopeValue; ScopeError unless it is one of the five forms."""
    if not isinstance(scope, str):
        raise ScopeError(field, "must be a string")
    parts = scope.split("#")
    if len(parts) == 2 and parts[0] in SIMPLE_TYPES:
        kind = parts[0]
        value = _parsed_part(parts[1], field=field)
        return Scope(scope, kind, value)
    if len(parts) == 4 and parts[0] == "agent" and parts[2] == "entity":
        agent = _parsed_part(parts[1], field=field)
        entity = _parsed_part(parts[3], field=field)
        return Scope(scope, ScopeType.AGENT_ENTITY.value, f"{agent}#{entity}")
    raise ScopeError(field, FORMS_RULE)


def _parsed_part(text: str, *, field: str) -> str:
    try:
        return part_text(text, field=field)
    except ScopeError as exc:
        # The part has no wire name of its own inside a scope string: name the scope.
        raise ScopeError(field, f"its value {exc.message}") from None


def candidate_scopes(*, chat_app_id: str, agent_id: str, tool_ids: list[str], entity_value: str | None) -> list[str]:
    """The scopes whose directives are candidates for one turn (docs/api.md, "The system prompt").

    A value that could not be part of a stored scope (empty, or holding `#`) has no directives,
    so it is left out rather than built into a string that might read as another form.
    """
    scopes: list[str] = []

    def add(kind: str, value: Any) -> None:
        try:
            scopes.append(build_scope(kind, value).scope)
        except ScopeError:
            pass

    add(ScopeType.CHATAPP, chat_app_id)
    add(ScopeType.AGENT, agent_id)
    for tool_id in tool_ids:
        add(ScopeType.TOOL, tool_id)
    if entity_value is not None:
        add(ScopeType.ENTITY, entity_value)
        add(ScopeType.AGENT_ENTITY, {"agent": agent_id, "entity": entity_value})
    return list(dict.fromkeys(scopes))
