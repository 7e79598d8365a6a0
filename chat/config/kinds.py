"""The kinds of definition a configuration holds (docs/api.md, "Configuration as code"), each mapped to
its app's serializers and services: the same reads and writes as its Admin API endpoints.

A kind knows how to name a definition, render a stored record without what the server manages
(stamps, versions, counts), check a definition on its own, and write or delete one. `KINDS` lists
them in dependency order: a kind only refers to kinds before it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models
from rest_framework import serializers

from agents import services as agent_services
from agents.models import AgentDefinition
from agents.serializers import SERVER_MANAGED_FIELDS as AGENT_SERVER_MANAGED_FIELDS
from agents.serializers import AgentSerializer, AgentWriteSerializer
from chat.chat_apps import services as chat_app_services
from chat.chat_apps.models import ChatApp
from chat.chat_apps.serializers import CHAT_APP_SERVER_MANAGED_FIELDS, ChatAppSerializer, ChatAppWriteSerializer
from directives import services as directive_services
from directives.models import SemanticDirective
from directives.serializers import SemanticDirectiveSerializer, validate_directive, validate_directive_key
from knowledge import services as knowledge_services
from knowledge.models import KnowledgeBase
from knowledge.selectors import with_counts
from knowledge.serializers import SERVER_MANAGED_FIELDS as KNOWLEDGE_SERVER_MANAGED_FIELDS
from knowledge.serializers import KnowledgeBaseSerializer, KnowledgeBaseWriteSerializer, validate_knowledge_base
from tags import services as tag_services
from tags.models import TagDefinition
from tags.serializers import TagDefinitionSerializer, render
from tools import services as tool_services
from tools.models import ToolDefinition
from tools.serializers import ToolSerializer

# Set by infrastructure-as-code batches only (docs/api.md, "Infrastructure-as-code batches"), never by a configuration.
_GROUP = frozenset({"groupId"})


@dataclass(frozen=True)
class Kind:
    """One kind of definition. `id_of` names a definition (ValidationError when it cannot); `check`
    validates one without writing, where its rules need no other record of the configuration."""

    name: str
    id_of: Callable[[Mapping[str, Any]], str]
    records: Callable[[], Iterable[models.Model]]
    record_id: Callable[[Any], str]
    get: Callable[[str], models.Model | None]
    render: Callable[[Any], dict[str, Any]]
    upsert: Callable[[dict[str, Any], str], Any]
    delete: Callable[[str, str], object]
    check: Callable[[dict[str, Any]], object] | None = None


def _without(data: Mapping[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    return {name: value for name, value in data.items() if name not in fields}


def _whole(serializer_class: type[serializers.Serializer], model: type[models.Model]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A definition completed with the default of each optional field it leaves out: a configuration
    states the whole record, where the Admin API's upsert keeps what an update does not name."""
    defaults = {}
    for name, field in serializer_class().fields.items():
        if field.required or field.read_only:
            continue
        try:
            model_field = model._meta.get_field(field.source or name)
        except FieldDoesNotExist:
            continue  # e.g. a knowledge base's `retrieval`, several fields in one: its keys keep their values
        if isinstance(model_field, models.Field):
            defaults[name] = model_field.get_default()
    return lambda definition: {**copy.deepcopy(defaults), **definition}


def _string_id(field: str) -> Callable[[Mapping[str, Any]], str]:
    def id_of(definition: Mapping[str, Any]) -> str:
        value = definition.get(field)
        if not isinstance(value, str) or not value.strip():
            raise serializers.ValidationError({field: ["is required: a non-empty string"]})
        return value

    return id_of


# --- tools ---------------------------------------------------------------------------------------

_TOOL_SERVER_MANAGED = frozenset({"version", "createdBy", "lastModifiedBy", "createdAt", "updatedAt"})
# Left out of an export when unset; null clears them (tools.services). The variant fields follow
# `executionType`, and `lifecycle` keeps its stored value: its moves have rules of their own.
_TOOL_OPTIONAL = ("accessRules", "approval", "testType", "auth")


def _tool_whole(definition: dict[str, Any]) -> dict[str, Any]:
    return {**dict.fromkeys(_TOOL_OPTIONAL), **definition}


TOOLS = Kind(
    name="tools",
    id_of=_string_id("toolId"),
    records=lambda: ToolDefinition.objects.order_by("tool_id"),
    record_id=lambda tool: tool.tool_id,
    get=lambda tool_id: ToolDefinition.objects.filter(tool_id=tool_id).first(),
    render=lambda tool: _without(ToolSerializer(tool).data, _TOOL_SERVER_MANAGED),
    upsert=lambda definition, user_id: tool_services.tool_upsert(tool=_tool_whole(definition), user_id=user_id),
    delete=lambda tool_id, user_id: tool_services.tool_delete(tool_id=tool_id, user_id=user_id),
    check=lambda definition: tool_services.tool_check(tool=_tool_whole(definition)),
)

# --- knowledge bases -----------------------------------------------------------------------------


def _knowledge_base_check(definition: dict[str, Any]) -> None:
    existing = KnowledgeBase.objects.filter(pk=definition["knowledgeBaseId"]).first()
    validate_knowledge_base(_kb_whole(definition), existing=existing)


_kb_whole = _whole(KnowledgeBaseWriteSerializer, KnowledgeBase)

KNOWLEDGE_BASES = Kind(
    name="knowledgeBases",
    id_of=_string_id("knowledgeBaseId"),
    records=lambda: with_counts(KnowledgeBase.objects.order_by("knowledge_base_id")),
    record_id=lambda base: base.knowledge_base_id,
    get=lambda base_id: with_counts(KnowledgeBase.objects.filter(pk=base_id)).first(),
    render=lambda base: _without(KnowledgeBaseSerializer(base).data, KNOWLEDGE_SERVER_MANAGED_FIELDS),
    upsert=lambda definition, user_id: knowledge_services.knowledge_base_upsert(data=_kb_whole(definition), user_id=user_id),
    delete=lambda base_id, user_id: knowledge_services.knowledge_base_delete(knowledge_base_id=base_id, user_id=user_id),
    check=_knowledge_base_check,
)

# --- agents: their rules name tools, knowledge bases and other agents, so they are checked as they are written


_agent_whole = _whole(AgentWriteSerializer, AgentDefinition)

AGENTS = Kind(
    name="agents",
    id_of=_string_id("agentId"),
    records=lambda: AgentDefinition.objects.order_by("agent_id"),
    record_id=lambda agent: agent.agent_id,
    get=lambda agent_id: AgentDefinition.objects.filter(agent_id=agent_id).first(),
    render=lambda agent: _without(AgentSerializer(agent).data, AGENT_SERVER_MANAGED_FIELDS),
    upsert=lambda definition, user_id: agent_services.agent_upsert(data=_agent_whole(definition), user_id=user_id),
    delete=lambda agent_id, user_id: agent_services.agent_delete(agent_id=agent_id, user_id=user_id),
)

# --- tag definitions, named "<scope>.<tag>" as the client names them -----------------------------

_TAG_SERVER_MANAGED = frozenset({"createdBy", "lastUpdatedBy", "createDate", "lastUpdate"}) | _GROUP


def _tag_id(definition: Mapping[str, Any]) -> str:
    scope, tag = definition.get("scope"), definition.get("tag")
    for field, value in (("scope", scope), ("tag", tag)):
        if not isinstance(value, str) or not value:
            raise serializers.ValidationError({field: ["is required: a non-empty string"]})
    return f"{scope}.{tag}"


def _tag_validated(definition: dict[str, Any]) -> dict[str, Any]:
    serializer = TagDefinitionSerializer(data=definition)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _tag_get(tag_id: str) -> TagDefinition | None:
    scope, _, tag = tag_id.partition(".")
    return TagDefinition.objects.filter(scope=scope, tag=tag).first()


def _tag_delete(tag_id: str, user_id: str) -> None:
    scope, _, tag = tag_id.partition(".")
    tag_services.tag_delete(scope=scope, tag=tag, user_id=user_id)


TAG_DEFINITIONS = Kind(
    name="tagDefinitions",
    id_of=_tag_id,
    records=lambda: TagDefinition.objects.order_by("scope", "tag"),
    record_id=lambda definition: f"{definition.scope}.{definition.tag}",
    get=_tag_get,
    render=lambda definition: _without(render(definition), _TAG_SERVER_MANAGED),
    upsert=lambda definition, user_id: tag_services.tag_upsert(definition=_tag_validated(definition), user_id=user_id),
    delete=_tag_delete,
    check=_tag_validated,
)

# --- semantic directives, named "<scope>/<id>" (an id is kebab-case, so the last "/" splits them) --

_DIRECTIVE_SERVER_MANAGED = frozenset({"createDate", "lastUpdate", "createdBy", "lastUpdatedBy"}) | _GROUP


def _directive_id(definition: Mapping[str, Any]) -> str:
    key = validate_directive_key(dict(definition))
    return f"{key['scope']}/{key['directive_id']}"


def _directive_get(key: str) -> SemanticDirective | None:
    scope, _, directive_id = key.rpartition("/")
    return SemanticDirective.objects.filter(scope=scope, directive_id=directive_id).first()


def _directive_delete(key: str, user_id: str) -> None:
    scope, _, directive_id = key.rpartition("/")
    directive_services.directive_delete(data={"scope": scope, "id": directive_id}, user_id=user_id)


SEMANTIC_DIRECTIVES = Kind(
    name="semanticDirectives",
    id_of=_directive_id,
    records=lambda: SemanticDirective.objects.order_by("scope", "directive_id"),
    record_id=lambda directive: f"{directive.scope}/{directive.directive_id}",
    get=_directive_get,
    render=lambda directive: _without(SemanticDirectiveSerializer(directive).data, _DIRECTIVE_SERVER_MANAGED),
    upsert=lambda definition, user_id: directive_services.directive_upsert(data=definition, user_id=user_id),
    delete=_directive_delete,
    check=validate_directive,
)

# --- chat apps: their rules name an agent ---------------------------------------------------------

_chat_app_whole = _whole(ChatAppWriteSerializer, ChatApp)

CHAT_APPS = Kind(
    name="chatApps",
    id_of=_string_id("chatAppId"),
    records=lambda: ChatApp.objects.order_by("chat_app_id"),
    record_id=lambda app: app.chat_app_id,
    get=lambda chat_app_id: ChatApp.objects.filter(chat_app_id=chat_app_id).first(),
    render=lambda app: _without(ChatAppSerializer(app).data, CHAT_APP_SERVER_MANAGED_FIELDS),
    upsert=lambda definition, user_id: chat_app_services.chat_app_upsert(data=_chat_app_whole(definition), user_id=user_id),
    delete=lambda chat_app_id, user_id: chat_app_services.chat_app_delete(chat_app_id=chat_app_id, user_id=user_id),
)

# Dependency order: written in this order, pruned in the reverse one.
KINDS: tuple[Kind, ...] = (TOOLS, KNOWLEDGE_BASES, AGENTS, TAG_DEFINITIONS, SEMANTIC_DIRECTIVES, CHAT_APPS)
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}
