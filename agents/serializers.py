"""Wire shapes of agents: the wire's camelCase names mapped to the models' snake_case, and every
validation rule of an agent write (docs/api.md, "Agents").

`AgentWriteSerializer` is the one place the rules live: `agents.services` runs it for the Admin
API and for rollbacks, and the Django admin form runs it through `validate_agent` as well.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from rest_framework import serializers

from agents.models import AgentDefinition, TestType
from agents.prompts import TemplateError, check_template
from agents.selectors import collaborator_chain_problem
from chatplatform.api.fields import StrictBooleanField, StrictCharField, check_access_rules, error_at, shaped
from chatplatform.api.schema import documented
from chatplatform.api.shapes import OutputSerializer
from chatplatform.model_names import MODEL_NAME_PATTERN, model_name_error
from knowledge import selectors as knowledge_selectors
from tools.models import LifecycleStatus, ToolDefinition
from tools.selectors import function_names, tools_by_ids

AGENT_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
AGENT_ID_RULE = "must be 1 to 128 letters, digits, hyphens or underscores"
CUSTOM_MAX_BYTES = 100 * 1024  # docs/api.md, "Limits": `custom` at most 100 KB serialized
# Sent back by clients that post a definition they read; the service owns them (docs/api.md, "Who may read what").
SERVER_MANAGED_FIELDS = frozenset({"version", "createdBy", "lastModifiedBy", "createdAt", "updatedAt"})
ROLLOUT_POLICY_KEYS = frozenset({"betaAccounts", "regionRestrictions", "toolOverrides"})
COLLABORATOR_KEYS = frozenset({"agentId", "instruction", "historyRelay"})
HISTORY_RELAYS = ("TO_COLLABORATOR", "TO_AGENT")
COLLABORATION_TYPES = ("SUPERVISOR", "SUPERVISOR_ROUTER", "DISABLED")
MAX_COLLABORATION_DEPTH = 3  # docs/api.md, "Collaborating agents": a chain is at most 3 deep
_UNAVAILABLE_TOOL_STATUSES = (LifecycleStatus.DEPRECATED, LifecycleStatus.RETIRED)


_STRINGS = {
    "type": "array",
    "items": {
        "type": "string",
        "minLength": 1,
        "x-messages": {"type": "must be a non-empty string", "minLength": "must be a non-empty string"},
    },
    "x-messages": {"type": "must be a list of strings"},
}


def _allowed(keys: frozenset[str]) -> str:
    return f"is not a known field (allowed: {', '.join(sorted(keys))})"


@documented({"pattern": MODEL_NAME_PATTERN})
def check_model_name(value: str) -> str:
    """`offline`, or `<provider>:<model>` with a provider chatplatform.llm can reach (docs/api.md, "Models")."""
    error = model_name_error(value)
    if error is not None:
        raise serializers.ValidationError(error)
    return value


# RolloutPolicy (docs/api.md, "Agents"); whether override targets exist is checked with the other tools.
check_rollout_policy = shaped(
    {
        "type": "object",
        "properties": {
            "betaAccounts": {**_STRINGS, "nullable": True},
            "regionRestrictions": {**_STRINGS, "nullable": True},
            "toolOverrides": {
                "type": "object",
                "nullable": True,
                "additionalProperties": {
                    "type": "string",
                    "minLength": 1,
                    "x-messages": dict.fromkeys(("type", "minLength"), "must be the id of the tool that replaces it"),
                },
            },
        },
        "additionalProperties": False,
        "x-messages": {"additionalProperties": _allowed(ROLLOUT_POLICY_KEYS)},
    }
)

_AGENT_ID_REQUIRED = f"is required and {AGENT_ID_RULE}"
_HISTORY_RELAY_RULE = f"must be {' or '.join(HISTORY_RELAYS)}"
# Collaborator: `{agentId, instruction, historyRelay}`, all three required.
check_collaborators = shaped(
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "agentId": {
                    "type": "string",
                    "pattern": AGENT_ID_PATTERN.pattern,
                    "x-messages": dict.fromkeys(("type", "pattern"), _AGENT_ID_REQUIRED),
                },
                "instruction": {"type": "string", "x-messages": {"type": "is required and must be a string"}},
                "historyRelay": {
                    "type": "string",
                    "enum": list(HISTORY_RELAYS),
                    "x-messages": dict.fromkeys(("type", "enum"), _HISTORY_RELAY_RULE),
                },
            },
            "required": ["agentId", "instruction", "historyRelay"],
            "additionalProperties": False,
            "x-messages": {"additionalProperties": _allowed(COLLABORATOR_KEYS)},
        },
        "x-messages": {"type": "must be a list of collaborators"},
    }
)
_KNOWLEDGE_BASES: dict[str, Any] = {
    "type": "array",
    "items": {"type": "object", "properties": {"id": {"type": "string", "minLength": 1}}, "required": ["id"]},
    "x-messages": {"type": "must be a list of knowledge bases"},
}
_knowledge_base_shapes = shaped(_KNOWLEDGE_BASES)


@documented(_KNOWLEDGE_BASES)
def check_knowledge_bases(value: Any) -> list[dict[str, Any]]:
    """An agent's knowledge base: `id` plus further fields, which are kept as sent."""
    _knowledge_base_shapes(value)
    seen: set[str] = set()
    for index, base in enumerate(value):
        base_id = base["id"]
        if base_id in seen:
            raise error_at((index, "id"), f"knowledge base {base_id} is listed twice")
        seen.add(base_id)
    return value


@documented({"type": "object"})
def check_custom(value: Any) -> dict[str, Any]:
    check_object(value)
    size = len(json.dumps(value, separators=(",", ":")).encode("utf-8"))
    if size > CUSTOM_MAX_BYTES:
        raise serializers.ValidationError(f"must be at most 100 KB ({CUSTOM_MAX_BYTES} bytes) serialized; it is {size} bytes")
    return value


_tool_id_shapes = shaped(_STRINGS)


@documented({**_STRINGS, "uniqueItems": True})
def check_tool_ids(value: Any) -> list[str]:
    _tool_id_shapes(value)
    twice = sorted(tool_id for tool_id, count in Counter(value).items() if count > 1)
    if twice:
        raise serializers.ValidationError(f"lists tool {twice[0]} more than once")
    return value


def _duplicate_function(tool_ids: list[str], tools: dict[str, ToolDefinition]) -> str | None:
    """The message for the first function name offered twice by these tools, if any (docs/api.md, "Agents")."""
    owners: dict[str, str] = {}
    for tool_id in tool_ids:
        for name in function_names(tools[tool_id]):
            if name in owners:
                first = owners[name]
                if first == tool_id:
                    return f"tool {tool_id} defines function {name!r} twice; the model is offered one tool per function name"
                return f"tools {first} and {tool_id} both define function {name!r}; the model is offered one tool per function name"
            owners[name] = tool_id
    return None


@documented({"type": "object"})
def check_object(value: Any) -> None:
    if not isinstance(value, dict):
        raise serializers.ValidationError("must be an object")


@documented({"pattern": AGENT_ID_PATTERN.pattern})
def check_agent_id(value: str) -> None:
    if not AGENT_ID_PATTERN.match(value):
        raise serializers.ValidationError(AGENT_ID_RULE)


def check_not_blank(value: str) -> None:
    if not value.strip():
        raise serializers.ValidationError("must not be blank")


def check_base_prompt(value: str) -> None:
    """Not blank, and a Handlebars template that compiles: a turn never sends it as written."""
    check_not_blank(value)
    try:
        check_template(value)
    except TemplateError as exc:
        raise serializers.ValidationError(str(exc)) from None


def check_agent_collaboration(value: Any) -> None:
    """docs/api.md, "Collaborating agents": one of COLLABORATION_TYPES, as a string or `{type}` (stored as the string)."""
    kinds = ", ".join(COLLABORATION_TYPES)
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"type"})
        if unknown:
            raise error_at((unknown[0],), "is not a known field (allowed: type)")
        if value.get("type") not in COLLABORATION_TYPES:
            raise error_at(("type",), f"must be one of {kinds}")
    elif value not in COLLABORATION_TYPES:
        raise serializers.ValidationError(f"must be one of {kinds}, or an object {{type}} holding one")


class AgentWriteSerializer(serializers.Serializer):
    """AgentDefinitionForCreate | AgentDefinitionForUpdate. Bind `instance` (the stored agent) and
    `partial=True` for an update: only the given fields change, but the whole result is checked."""

    REFUSES_UNKNOWN_FIELDS = True  # but for the server-managed fields, ignored

    agentId = StrictCharField(source="agent_id", max_length=128, validators=[check_agent_id])
    # Under 4000 characters is advised, but there is no limit (docs/api.md, "Limits"), so only emptiness is refused.
    basePrompt = StrictCharField(source="base_prompt", trim_whitespace=False, validators=[check_base_prompt])
    toolIds = serializers.JSONField(
        source="tool_ids", validators=[check_tool_ids], error_messages={"required": "is required", "null": "must not be null"}
    )
    foundationModel = StrictCharField(
        source="foundation_model", max_length=200, required=False, allow_null=True, validators=[check_model_name]
    )
    verificationFoundationModel = StrictCharField(
        source="verification_foundation_model", max_length=200, required=False, allow_null=True, validators=[check_model_name]
    )
    accessRules = serializers.JSONField(source="access_rules", required=False, allow_null=True, validators=[check_access_rules])
    rolloutPolicy = serializers.JSONField(source="rollout_policy", required=False, allow_null=True, validators=[check_rollout_policy])
    collaborators = serializers.JSONField(required=False, allow_null=True, validators=[check_collaborators])
    agentCollaboration = serializers.JSONField(
        source="agent_collaboration", required=False, allow_null=True, validators=[check_agent_collaboration]
    )
    knowledgeBases = serializers.JSONField(source="knowledge_bases", required=False, allow_null=True, validators=[check_knowledge_bases])
    custom = serializers.JSONField(required=False, allow_null=True, validators=[check_custom])
    runtimeAdapter = StrictCharField(source="runtime_adapter", max_length=500, required=False, allow_null=True)
    dontCacheThis = StrictBooleanField(source="dont_cache_this", required=False, error_messages={"invalid": "must be a boolean"})
    testType = serializers.ChoiceField(
        source="test_type", choices=TestType.choices, required=False, allow_null=True, error_messages={"invalid_choice": "must be mock"}
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields) - SERVER_MANAGED_FIELDS)
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a field of an agent definition"]})
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Rules that need the database or several fields, applied to the agent as it will be."""
        existing: AgentDefinition | None = self.instance

        def resulting(name: str) -> Any:
            return attrs[name] if name in attrs else getattr(existing, name, None)

        agent_id = resulting("agent_id")
        tool_ids: list[str] = resulting("tool_ids") or []
        overrides: dict[str, str] = (resulting("rollout_policy") or {}).get("toolOverrides") or {}
        tools = tools_by_ids([*tool_ids, *overrides.values()])

        missing = [tool_id for tool_id in tool_ids if tool_id not in tools]
        if missing:
            raise error_at(("toolIds",), f"tool {missing[0]} does not exist")
        already_on_agent = set(existing.tool_ids) if existing is not None else set()
        for tool_id in tool_ids:
            status = tools[tool_id].lifecycle_status
            # A deprecated tool keeps working for agents that have it, but is not added (docs/api.md, "Agents").
            if tool_id not in already_on_agent and status in _UNAVAILABLE_TOOL_STATUSES:
                migration = tools[tool_id].migration_path
                hint = f" (migration path: {migration})" if migration else ""
                raise error_at(("toolIds",), f"tool {tool_id} is {status} and cannot be added to an agent{hint}")
        duplicate = _duplicate_function(tool_ids, tools)
        if duplicate:
            raise error_at(("toolIds",), duplicate)

        for old, new in overrides.items():
            if new not in tools:
                raise error_at(("rolloutPolicy", "toolOverrides", old), f"tool {new} does not exist")
        # Overrides swap tools at run time (docs/api.md, "Agents"), so the swapped set must not clash either.
        swapped = [overrides.get(tool_id, tool_id) for tool_id in tool_ids]
        if swapped != tool_ids:
            duplicate = _duplicate_function(list(dict.fromkeys(swapped)), tools)
            if duplicate:
                raise error_at(("rolloutPolicy", "toolOverrides"), duplicate)

        collaborators = resulting("collaborators") or []
        wanted = {collaborator["agentId"] for collaborator in collaborators}
        known = set(AgentDefinition.objects.filter(agent_id__in=wanted).values_list("agent_id", flat=True))
        listed: set[str] = set()
        for index, collaborator in enumerate(collaborators):
            if collaborator["agentId"] == agent_id:
                raise error_at(("collaborators", index, "agentId"), "an agent cannot be its own collaborator")
            if collaborator["agentId"] not in known:
                raise error_at(("collaborators", index, "agentId"), f"agent {collaborator['agentId']} does not exist")
            if collaborator["agentId"] in listed:
                raise error_at(("collaborators", index, "agentId"), f"agent {collaborator['agentId']} is listed twice")
            listed.add(collaborator["agentId"])
        if "collaborators" in attrs:  # only a change of this agent's list can make a chain loop or deepen
            problem = collaborator_chain_problem(
                agent_id, [collaborator["agentId"] for collaborator in collaborators], max_depth=MAX_COLLABORATION_DEPTH
            )
            if problem:
                raise error_at(("collaborators",), problem)

        if isinstance(attrs.get("agent_collaboration"), dict):
            attrs["agent_collaboration"] = attrs["agent_collaboration"]["type"]  # stored as the string

        bases = resulting("knowledge_bases") or []
        existing_bases = knowledge_selectors.existing_ids(base["id"] for base in bases)
        for index, base in enumerate(bases):
            if base["id"] not in existing_bases:
                raise error_at(("knowledgeBases", index, "id"), f"knowledge base {base['id']} does not exist")
        return attrs


def validate_agent(data: Any, *, existing: AgentDefinition | None) -> dict[str, Any]:
    """The model fields an agent write sets, after every rule; ValidationError (unwrapped) otherwise."""
    serializer = AgentWriteSerializer(instance=existing, data=data, partial=existing is not None)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class AgentSerializer(OutputSerializer):
    """AgentDefinition as the API shows it (docs/api.md, "Agents"). Absent optional fields are null."""

    agentId = serializers.CharField(source="agent_id")
    basePrompt = serializers.CharField(source="base_prompt")
    toolIds = serializers.JSONField(source="tool_ids")
    foundationModel = serializers.CharField(source="foundation_model", allow_null=True)
    verificationFoundationModel = serializers.CharField(source="verification_foundation_model", allow_null=True)
    accessRules = serializers.JSONField(source="access_rules", allow_null=True)
    rolloutPolicy = serializers.JSONField(source="rollout_policy", allow_null=True)
    collaborators = serializers.JSONField(allow_null=True)
    agentCollaboration = serializers.JSONField(source="agent_collaboration", allow_null=True)
    knowledgeBases = serializers.JSONField(source="knowledge_bases", allow_null=True)
    custom = serializers.JSONField(allow_null=True)
    runtimeAdapter = serializers.CharField(source="runtime_adapter", allow_null=True)
    dontCacheThis = serializers.BooleanField(source="dont_cache_this")
    testType = serializers.CharField(source="test_type", allow_null=True)
    version = serializers.IntegerField()
    createdBy = serializers.CharField(source="created_by")
    lastModifiedBy = serializers.CharField(source="last_modified_by")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class AgentVersionSerializer(OutputSerializer):
    """One entry of an agent's version history."""

    version = serializers.IntegerField()
    modifiedBy = serializers.CharField(source="modified_by")
    modifiedAt = serializers.DateTimeField(source="modified_at")


class AgentVersionDetailSerializer(AgentVersionSerializer):
    agent = serializers.JSONField(source="definition")


# --- request bodies --------------------------------------------------------------------------


class AgentUpsertRequestSerializer(serializers.Serializer):
    agent = serializers.JSONField(
        validators=[check_object], help_text="AgentDefinitionForCreate, or AgentDefinitionForUpdate: agentId and the fields to change."
    )
    userId = StrictCharField(required=False, allow_blank=True, help_text="Stamped as createdBy / lastModifiedBy.")


class AgentSearchRequestSerializer(serializers.Serializer):
    agentIds = serializers.ListField(child=StrictCharField(), required=False, allow_null=True)
    userId = StrictCharField(required=False, allow_blank=True)


class AgentRollbackRequestSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1, max_value=2**31 - 1)  # the column is an integer
    userId = StrictCharField(required=False, allow_blank=True)
