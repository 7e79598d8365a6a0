"""Wire shapes of semantic directives: the wire's camelCase names mapped to the model's snake_case,
and every validation rule of a directive write.

`validate_directive` is the one place the write rules live: `directives.services` runs it for the
Admin API, the IaC batch and the management command, and the Django admin form runs it in clean().

Limits (docs/api.md, "Limits"): `id` at most 128 characters,
`description` at most 2,000, `instructions` at most 20,000, each scope part at most 200.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.core.validators import RegexValidator
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chatplatform.api.fields import STRING_MESSAGES, StrictBooleanField, StrictCharField, WholeNumberField
from chatplatform.api.schema import one_of_values
from chatplatform.api.shapes import OutputSerializer, iso
from directives.models import DIRECTIVE_ID_MAX_LENGTH, GROUP_ID_MAX_LENGTH, SCOPE_PART_MAX_LENGTH, ScopeType
from directives.scopes import SIMPLE_TYPES, Scope, ScopeError, build_scope, parse_scope

DIRECTIVE_ID_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DIRECTIVE_ID_RULE = (
    f"must be descriptive kebab-case of at most {DIRECTIVE_ID_MAX_LENGTH} characters: lowercase letters and digits "
    "in words joined by single hyphens (e.g. answer-in-french)"
)
DESCRIPTION_MAX_LENGTH = 2_000
INSTRUCTIONS_MAX_LENGTH = 20_000
SEARCH_DEFAULT_LIMIT = 100
SEARCH_MAX_LIMIT = 1_000
SEARCH_MAX_KEYS = 100  # scopes or directiveIds in one search: an IN list, not a bulk export
SORT_ORDERS = ("asc", "desc")
_LIMIT_RULE = f"must be a whole number from 1 to {SEARCH_MAX_LIMIT}"


@extend_schema_field(OpenApiTypes.DATETIME)
class TimestampField(serializers.Field):
    """An ISO 8601 timestamp; one without an offset is read as UTC."""

    default_error_messages = {"invalid": "must be an ISO 8601 timestamp (e.g. 2026-01-31T12:00:00Z)"}

    def to_internal_value(self, data: Any) -> datetime:
        parsed = None
        if isinstance(data, str):
            try:
                parsed = parse_datetime(data.strip())
            except ValueError:  # well-formed but impossible, e.g. month 13
                parsed = None
        if parsed is None:
            self.fail("invalid")
        return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)

    def to_representation(self, value: datetime) -> str:
        return iso(value)


def _absent(value: Any) -> bool:
    return value is None or value == ""


def scope_from(attrs: dict[str, Any]) -> Scope:
    """The scope a write or delete names: `scope`, or `scopeType` + `scopeValue`; both must agree.

    Raises ValidationError naming the wire field at fault.
    """
    scope, scope_type, scope_value = attrs.get("scope"), attrs.get("scopeType"), attrs.get("scopeValue")
    try:
        if not _absent(scope):
            parsed = parse_scope(scope)
            # A client posting back a directive it read sends all three: they must say the same.
            if not _absent(scope_type) and scope_type != parsed.scope_type:
                raise ScopeError("scope", f"is a {parsed.scope_type} scope but scopeType is {scope_type}")
            if scope_value is not None and build_scope(parsed.scope_type, scope_value) != parsed:
                raise ScopeError("scope", "does not match scopeValue")
            return parsed
        if _absent(scope_type):
            raise ScopeError("scopeType", "is required (or give scope)")
        if scope_value is None:
            raise ScopeError("scopeValue", "is required (or give scope)")
        return build_scope(scope_type, scope_value)
    except ScopeError as exc:
        raise serializers.ValidationError({exc.field: [exc.message]})


# The schema of `scope_from`'s rule: `scope` alone, or `scopeType` + `scopeValue` (a body naming
# all three, agreeing, is accepted too; the schema leaves that out).
_PART = f"[^#\\s][^#]{{0,{SCOPE_PART_MAX_LENGTH - 1}}}"
# A number is written out in full (1e300 as 301 digits): bounded so that it fits a part.
_PART_VALUE = {"anyOf": [{"type": "string", "pattern": f"^{_PART}$"}, {"type": "number", "minimum": -1e198, "maximum": 1e198}]}
_ABSENT = {"nullable": True, "enum": [None]}
SCOPE_RULES = {
    "anyOf": [
        {
            "properties": {
                "scope": {"type": "string", "pattern": f"^(?:(?:chatapp|agent|tool|entity)#{_PART}|agent#{_PART}#entity#{_PART})$"},
                "scopeType": _ABSENT,
                "scopeValue": _ABSENT,
            },
            "required": ["scope"],
        },
        {
            "properties": {
                "scope": {"type": "string", "maxLength": 0, "nullable": True},
                "scopeType": one_of_values(*(str(kind) for kind in SIMPLE_TYPES)),
                "scopeValue": _PART_VALUE,
            },
            "required": ["scopeType", "scopeValue"],
        },
        {
            "properties": {
                "scope": {"type": "string", "maxLength": 0, "nullable": True},
                "scopeType": one_of_values(ScopeType.AGENT_ENTITY.value),
                "scopeValue": {
                    "type": "object",
                    "properties": {"agent": _PART_VALUE, "entity": _PART_VALUE},
                    "required": ["agent", "entity"],
                    "additionalProperties": False,
                },
            },
            "required": ["scopeType", "scopeValue"],
        },
    ]
}
_check_directive_id = RegexValidator(DIRECTIVE_ID_PATTERN, DIRECTIVE_ID_RULE)
_check_not_blank = RegexValidator(r"^[^\x00]*[^\x00\s][^\x00]*$", STRING_MESSAGES["blank"])


class _ScopeFields(serializers.Serializer):
    REQUEST_SCHEMA_RULES = SCOPE_RULES
    scope = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="chatapp#<id>, agent#<id>, tool#<id>, entity#<value> or agent#<agentId>#entity#<value>; or give scopeType + scopeValue.",
    )
    scopeType = serializers.JSONField(required=False, allow_null=True, help_text=f"One of {', '.join(ScopeType.values)}.")
    scopeValue = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="A string or a number; {agent, entity} for agent-entity. Must not contain '#'.",
    )


class DirectiveWriteSerializer(_ScopeFields):
    """A directive as a create-or-update sends it. Stamps, dates and `groupId` are ignored."""

    id = StrictCharField(
        max_length=DIRECTIVE_ID_MAX_LENGTH, validators=[_check_directive_id], help_text="Unique within the scope; kebab-case."
    )
    description = StrictCharField(max_length=DESCRIPTION_MAX_LENGTH, help_text="When the directive applies; read by the selection step.")
    instructions = StrictCharField(
        max_length=INSTRUCTIONS_MAX_LENGTH, trim_whitespace=False, validators=[_check_not_blank], help_text="Injected into the prompt."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        scope = scope_from(attrs)
        return {
            "scope": scope.scope,
            "scope_type": scope.scope_type,
            "scope_value": scope.scope_value,
            "directive_id": attrs["id"],
            "description": attrs["description"],
            "instructions": attrs["instructions"],
        }


class DirectiveKeySerializer(_ScopeFields):
    """What names one directive: its scope and `id`."""

    id = StrictCharField(max_length=DIRECTIVE_ID_MAX_LENGTH)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {"scope": scope_from(attrs).scope, "directive_id": attrs["id"]}


def _validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise serializers.ValidationError(["must be an object"])
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def validate_directive(data: Any) -> dict[str, Any]:
    """The model fields a directive write sets (scope built, id checked); ValidationError (unwrapped) otherwise."""
    return _validated(DirectiveWriteSerializer, data)


def validate_directive_key(data: Any) -> dict[str, Any]:
    """`{scope, directive_id}` of the directive `data` names; ValidationError (unwrapped) otherwise."""
    return _validated(DirectiveKeySerializer, data)


def validate_group_id(value: Any) -> str:
    """An IaC group id: a non-blank string of at most 128 characters, without surrounding spaces."""
    if not isinstance(value, str) or not value.strip():
        raise serializers.ValidationError({"groupId": ["is required: a non-empty string"]})
    if len(value) > GROUP_ID_MAX_LENGTH or value != value.strip():
        raise serializers.ValidationError({"groupId": [f"must be at most {GROUP_ID_MAX_LENGTH} characters without surrounding spaces"]})
    return value


# --- responses -----------------------------------------------------------------------------------


class SemanticDirectiveSerializer(OutputSerializer):
    """SemanticDirective as the API shows it. `groupId` only when set; `instructions` unless the
    context says `include_instructions: False` (search without includeInstructions)."""

    OMIT_WHEN_NULL = ("groupId",)
    OMIT_UNLESS_CONTEXT = {"instructions": "include_instructions"}

    scope = serializers.CharField()
    scopeType = serializers.ChoiceField(source="scope_type", choices=ScopeType.values)
    scopeValue = serializers.JSONField(source="scope_value_wire", help_text="A string; {agent, entity} for agent-entity.")
    id = serializers.CharField(source="directive_id")
    groupId = serializers.CharField(source="group_id", required=False, help_text="Only on directives deployed by an IaC batch.")
    description = serializers.CharField()
    instructions = serializers.CharField(required=False, help_text="Always on writes; on searches only with includeInstructions.")
    createDate = serializers.DateTimeField(source="create_date")
    lastUpdate = serializers.DateTimeField(source="last_update")
    createdBy = serializers.CharField(source="created_by")
    lastUpdatedBy = serializers.CharField(source="last_updated_by")


# --- request bodies ------------------------------------------------------------------------------


class _UserIdField(StrictCharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, allow_null=True, allow_blank=True, max_length=255, **kwargs)


class DirectiveBodySerializer(serializers.Serializer):
    """The body of an upsert or a delete, as parsed; the service checks the directive itself."""

    semanticDirective = serializers.JSONField(help_text="The directive: checked by the service, which names the field at fault.")
    userId = _UserIdField(help_text="Stamped as createdBy (on create) and lastUpdatedBy; default: the caller.")

    def validate_semanticDirective(self, value: Any) -> dict[str, Any]:  # noqa: N802 (DRF: validate_<wire name>)
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be an object")
        return value


class SemanticDirectiveUpsertSerializer(serializers.Serializer):
    """The upsert body as the OpenAPI document shows it."""

    semanticDirective = DirectiveWriteSerializer()
    userId = _UserIdField()


class SemanticDirectiveDeleteSerializer(serializers.Serializer):
    """The delete body as the OpenAPI document shows it."""

    semanticDirective = DirectiveKeySerializer()
    userId = _UserIdField()


def _string_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise serializers.ValidationError("must be a list of strings")
    if len(value) > SEARCH_MAX_KEYS:
        raise serializers.ValidationError(f"must hold at most {SEARCH_MAX_KEYS} items")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise serializers.ValidationError([*([[]] * index), ["must be a non-empty string"]])
    return list(dict.fromkeys(value))


class DirectiveSearchRequestSerializer(serializers.Serializer):
    """The search fields, all optional. Empty lists and strings count as absent."""

    scopes = serializers.JSONField(required=False, allow_null=True, help_text="List of scope strings; wins over every other selector.")
    createdBy = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)
    directiveIds = serializers.JSONField(required=False, allow_null=True, help_text="List of directive ids, looked up across scopes.")
    createdAfter = TimestampField(required=False, allow_null=True, help_text="Inclusive lower bound on createDate.")
    createdBefore = TimestampField(required=False, allow_null=True, help_text="Exclusive upper bound on createDate.")
    updatedAfter = TimestampField(required=False, allow_null=True, help_text="Inclusive lower bound on lastUpdate.")
    updatedBefore = TimestampField(required=False, allow_null=True, help_text="Exclusive upper bound on lastUpdate.")
    sortOrder = serializers.ChoiceField(
        choices=SORT_ORDERS,
        default="desc",
        allow_null=True,
        error_messages={"invalid_choice": "must be asc or desc"},
        help_text="By createDate.",
    )
    limit = WholeNumberField(
        min_value=1,
        max_value=SEARCH_MAX_LIMIT,
        default=SEARCH_DEFAULT_LIMIT,
        allow_null=True,
        error_messages=dict.fromkeys(("invalid", "min_value", "max_value", "max_string_length"), _LIMIT_RULE),
    )
    includeInstructions = StrictBooleanField(default=False, allow_null=True)
    paginationToken = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
    userId = _UserIdField()

    def validate_scopes(self, value: Any) -> list[str] | None:
        if value is None:
            return None
        scopes = _string_list(value)
        for index, scope in enumerate(scopes):
            try:
                parse_scope(scope)
            except ScopeError as exc:
                raise serializers.ValidationError([*([[]] * index), [exc.message]])
        return scopes or None

    def validate_directiveIds(self, value: Any) -> list[str] | None:  # noqa: N802 (DRF: validate_<wire name>)
        if value is None:
            return None
        return _string_list(value) or None


class DirectiveDeployRequestSerializer(serializers.Serializer):
    """docs/api.md, "Infrastructure-as-code batches": `data` is base64 of gzip of `{userId, semanticDirectives: [...]}`."""

    stage = StrictCharField(help_text="Must equal this deployment's CHAT_STAGE.")
    timestamp = serializers.JSONField(required=False, allow_null=True, help_text="String or number; recorded, forces a re-application.")
    groupId = StrictCharField(
        max_length=GROUP_ID_MAX_LENGTH, help_text="Every directive of the batch gets it; the group's directives missing are deleted."
    )
    data = StrictCharField(trim_whitespace=False, help_text="base64 of gzip of the JSON {userId, semanticDirectives}.")  # type: ignore[assignment]  # the wire name shadows Serializer.data

    def validate_timestamp(self, value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise serializers.ValidationError("must be a string or a number")
        return str(value)[:100]
