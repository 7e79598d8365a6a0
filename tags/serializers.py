"""Wire shapes of tag definitions: the wire's camelCase names mapped to the model's snake_case.

This is the only place that maps them. `TagDefinitionSerializer` validates a definition for the
API, the IaC batch (endpoint and command) and the Django admin form, and renders one for every
response.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chatplatform.api.fields import StrictBooleanField
from chatplatform.api.shapes import OutputSerializer
from tags.models import TagDefinition, TagStatus, UsageMode
from tags.validation import (
    CONTEXT_OPTIONS_SCHEMAS,
    INSTRUCTION_ITEMS_SCHEMA,
    NAME_PATTERN,
    NAME_RULE,
    RENDERING_CONTEXTS,
    WIDGET_SCHEMA,
    clean_instruction_items,
    clean_rendering_contexts,
    clean_widget,
)

STAGE_PLACEHOLDER = "{{stage}}"


class NameField(serializers.RegexField):
    """`scope` and `tag` (docs/api.md, "Tag definitions")."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(NAME_PATTERN, max_length=100, error_messages={"invalid": NAME_RULE}, **kwargs)


@extend_schema_field(WIDGET_SCHEMA)
class WidgetField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        return clean_widget(data)

    def to_representation(self, value: Any) -> Any:
        return value


def _rendering_context(name: str) -> dict[str, Any]:
    """One context: a boolean, or `{enabled, ...options}` with the options tags.validation checks."""
    options = CONTEXT_OPTIONS_SCHEMAS.get(name, {}).get("properties", {})
    nullable = {key: {**option, "nullable": True} for key, option in options.items()}  # a null option is left out
    config: dict[str, Any] = {"type": "object", "properties": {"enabled": {"type": "boolean"}, **nullable}, "required": ["enabled"]}
    if name in CONTEXT_OPTIONS_SCHEMAS:
        config["additionalProperties"] = False  # inline, canvas and dialog keep other keys for the client runtime
    return {"oneOf": [{"type": "boolean"}, config]}


@extend_schema_field(
    {
        "type": "object",
        "description": "Accepted as a boolean or an object `{enabled, ...options}` per context; always returned as the object form.",
        "properties": {name: _rendering_context(name) for name in RENDERING_CONTEXTS},
        "additionalProperties": False,
    }
)
class RenderingContextsField(serializers.Field):
    def to_internal_value(self, data: Any) -> dict[str, Any]:
        return clean_rendering_contexts(data)

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(INSTRUCTION_ITEMS_SCHEMA)
class InstructionItemsField(serializers.Field):
    def to_internal_value(self, data: Any) -> list[dict[str, Any]]:
        return clean_instruction_items(data)

    def to_representation(self, value: Any) -> Any:
        return value


def _choice_message(what: str, choices: list[str]) -> dict[str, Any]:
    return {"invalid_choice": f'"{{input}}" is not a valid {what}: must be one of {", ".join(choices)}'}


class TagDefinitionSerializer(OutputSerializer):
    """A TagDefinition in (validated; the older form completed) and out (stamps included)."""

    scope = NameField()
    tag = NameField()
    usageMode = serializers.ChoiceField(
        source="usage_mode", choices=UsageMode.choices, error_messages=_choice_message("usage mode", UsageMode.values)
    )
    widget = WidgetField()
    llmInstructionsMd = serializers.CharField(
        source="llm_instructions_md", required=False, allow_null=True, allow_blank=True, trim_whitespace=False
    )
    llmInstructions = InstructionItemsField(source="llm_instructions", required=False, allow_null=True)
    status = serializers.ChoiceField(choices=TagStatus.choices, error_messages=_choice_message("status", TagStatus.values))
    renderingContexts = RenderingContextsField(source="rendering_contexts")
    canBeGeneratedByLlm = serializers.BooleanField(source="can_be_generated_by_llm")
    canBeGeneratedByTool = serializers.BooleanField(source="can_be_generated_by_tool")
    description = serializers.CharField()
    dontCacheThis = serializers.BooleanField(source="dont_cache_this", required=False, default=False)
    groupId = serializers.CharField(source="group_id", read_only=True, allow_null=True)
    createdBy = serializers.CharField(source="created_by", read_only=True)
    lastUpdatedBy = serializers.CharField(source="last_updated_by", read_only=True)
    createDate = serializers.DateTimeField(source="create_date", read_only=True)
    lastUpdate = serializers.DateTimeField(source="last_update", read_only=True)

    # Absent rather than null in responses when unset (they are optional).
    OMIT_WHEN_NULL = ("llmInstructionsMd", "llmInstructions", "groupId")
    OMIT_UNLESS_CONTEXT = {"llmInstructionsMd": "include_instructions", "llmInstructions": "include_instructions"}

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, Mapping) and "status" not in data and "enabled" in data:
            data = complete_older_form(data)
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        markdown = attrs.get("llm_instructions_md")
        attrs["llm_instructions_md"] = markdown if markdown and markdown.strip() else None
        attrs["llm_instructions"] = attrs.get("llm_instructions") or None
        # The model must be told how to use a tag it may emit.
        if attrs["can_be_generated_by_llm"] and not attrs["llm_instructions_md"] and not attrs["llm_instructions"]:
            raise serializers.ValidationError(
                {"llmInstructionsMd": ["is required when canBeGeneratedByLlm is true (or give llmInstructions)"]}
            )
        return attrs


def complete_older_form(data: Mapping[str, Any]) -> dict[str, Any]:
    """The older form (`llmInstructions` + boolean `enabled`), completed (docs/api.md, "Tag definitions")."""
    enabled = data.get("enabled")
    if not isinstance(enabled, bool):
        raise serializers.ValidationError({"enabled": ["must be true or false (older form; the current form uses status)"]})
    completed = {key: value for key, value in data.items() if key != "enabled"}
    completed["status"] = TagStatus.ENABLED if enabled else TagStatus.DISABLED
    completed.setdefault("usageMode", UsageMode.CHAT_APP)
    completed.setdefault("renderingContexts", {"inline": {"enabled": True}})
    completed.setdefault("canBeGeneratedByLlm", True)
    completed.setdefault("canBeGeneratedByTool", False)
    completed.setdefault("description", data.get("tag"))
    return completed


def writable_fields() -> dict[str, str]:
    """Wire name → model field name of everything a client may write."""
    return {
        name: field.source for name, field in TagDefinitionSerializer().fields.items() if not field.read_only and field.source is not None
    }


def wire_from_model_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    """Model-named values (a Django admin form's) as the wire payload the serializer validates."""
    return {wire: values[model] for wire, model in writable_fields().items() if model in values}


def render(definition: TagDefinition, *, include_instructions: bool = True) -> dict[str, Any]:
    return TagDefinitionSerializer(definition, context={"include_instructions": include_instructions}).data


def render_many(definitions: list[TagDefinition], *, include_instructions: bool) -> list[dict[str, Any]]:
    # many=True makes a ListSerializer, whose data is a list; the stubs type the constructor's class.
    return TagDefinitionSerializer(definitions, many=True, context={"include_instructions": include_instructions}).data  # type: ignore[return-value]


def _with_stage(item: Any) -> Any:
    """docs/api.md, "Infrastructure-as-code batches": `{{stage}}` in a web component `url` becomes this deployment's stage."""
    if not isinstance(item, dict):
        return item
    component = (item.get("widget") or {}).get("webComponent") if isinstance(item.get("widget"), dict) else None
    if not isinstance(component, dict) or not isinstance(component.get("url"), str) or STAGE_PLACEHOLDER not in component["url"]:
        return item
    item = copy.deepcopy(item)
    component = item["widget"]["webComponent"]
    component["url"] = component["url"].replace(STAGE_PLACEHOLDER, settings.CHAT_STAGE)
    return item


def validate_batch(payload: Mapping[str, Any], *, field: str | None = "data") -> tuple[str | None, list[dict[str, Any]]]:
    """The `userId` and the validated `tagDefinitions` of an IaC batch. Every member is validated
    before anything is written; the errors name each bad member's index and field."""

    def fail(detail: Any) -> serializers.ValidationError:
        return serializers.ValidationError({field: detail} if field else detail)

    user_id = payload.get("userId")
    if user_id is not None and (not isinstance(user_id, str) or len(user_id) > 255):
        raise fail({"userId": ["must be a string of at most 255 characters"]})
    items = payload.get("tagDefinitions")
    if not isinstance(items, list):
        raise fail({"tagDefinitions": ["is required: a list of tag definitions"]})

    errors: list[Any] = []
    members: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(items):
        serializer = TagDefinitionSerializer(data=_with_stage(item))
        if not serializer.is_valid():
            errors.append(serializer.errors)
            continue
        member = serializer.validated_data
        key = (member["scope"], member["tag"])
        if key in seen:
            errors.append({"tag": [f"duplicates item {seen[key]}: scope {key[0]!r}, tag {key[1]!r} appear twice in the batch"]})
            continue
        seen[key] = index
        errors.append({})
        members.append(member)
    if any(errors):
        raise fail({"tagDefinitions": errors})
    return user_id or None, members


class TagDefinitionUpsertRequestSerializer(serializers.Serializer):
    tagDefinition = TagDefinitionSerializer()
    userId = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=255)


class TagDefinitionLiteSerializer(serializers.Serializer):
    scope = NameField()
    tag = NameField()


class TagDefinitionDeleteRequestSerializer(serializers.Serializer):
    tagDefinition = TagDefinitionLiteSerializer()
    userId = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=255)


class TagDefinitionSearchRequestSerializer(serializers.Serializer):
    includeInstructions = StrictBooleanField(required=False, default=False)
    paginationToken = serializers.CharField(required=False, allow_null=True, allow_blank=True)


@extend_schema_field(OpenApiTypes.STR)
class TimestampField(serializers.Field):
    """A string or a number (docs/api.md, "Infrastructure-as-code batches")."""

    def to_internal_value(self, data: Any) -> str:
        if isinstance(data, bool) or not isinstance(data, str | int | float):
            raise serializers.ValidationError("must be a string or a number")
        return str(data)

    def to_representation(self, value: Any) -> Any:
        return value


class TagDefinitionDeployRequestSerializer(serializers.Serializer):
    stage = serializers.CharField()
    timestamp = TimestampField(required=False, allow_null=True)
    groupId = serializers.CharField(max_length=200)
    data = serializers.CharField(trim_whitespace=False, help_text="base64 of gzip of the JSON {userId, tagDefinitions: [...]}")  # type: ignore[assignment]  # the wire name shadows Serializer.data
