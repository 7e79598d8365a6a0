"""Wire shapes of tool definitions: the wire's camelCase names mapped to the model's snake_case.

`ToolSerializer` is the one place the names are mapped, in both directions: it renders a stored
tool (with `auth.clientSecret` redacted and no cached token), and `model_values` /
`definition_from_model_values` use its field sources to go from a cleaned wire definition to
model fields and back. Validation lives in tools.validation.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chatplatform.api.shapes import OutputSerializer
from tools.models import ExecutionType, LifecycleStatus, TestType, ToolDefinition
from tools.schema import ACCESS_EFFECTS, PARAMETER_TYPES, VARIANT_FIELDS
from tools.validation import REDACTED

# --- documentation of the nested shapes (drf-spectacular components) ---------------------------


class ParameterDefinitionSerializer(serializers.Serializer):
    description = serializers.CharField(allow_blank=True)
    type = serializers.ChoiceField(choices=PARAMETER_TYPES)
    required = serializers.BooleanField()  # type: ignore[assignment]  # the wire name shadows Field.required
    enum = serializers.ListField(child=serializers.CharField(), required=False, help_text="Only for type string.")
    items = serializers.JSONField(required=False, help_text="A ParameterDefinition; required for type array.")
    properties = serializers.DictField(
        child=serializers.JSONField(), required=False, help_text="Map of name to ParameterDefinition; required for type object."
    )


class FunctionDefinitionSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Pattern ([0-9a-zA-Z][_-]?){1,100}; unique within the tool.")
    description = serializers.CharField()
    parameters = serializers.DictField(child=ParameterDefinitionSerializer())


class ToolLifecycleSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=LifecycleStatus.choices)
    deprecationDate = serializers.DateTimeField(required=False)
    migrationPath = serializers.CharField(required=False, help_text="Instructions or the id of the tool replacing this one.")


class AccessRuleSerializer(serializers.Serializer):
    condition = serializers.CharField(required=False, help_text="CEL expression over user.*, account.*, customData.*")
    effect = serializers.ChoiceField(choices=ACCESS_EFFECTS)
    order = serializers.FloatField(required=False)
    description = serializers.CharField(required=False)


class McpAuthSerializer(serializers.Serializer):
    clientId = serializers.CharField()
    clientSecret = serializers.CharField(
        help_text=f'Write only: responses show "{REDACTED}"; sending "{REDACTED}" back keeps the stored secret.'
    )
    tokenUrl = serializers.URLField()


@extend_schema_field(FunctionDefinitionSerializer(many=True))
class FunctionSchemaField(serializers.JSONField):
    pass


@extend_schema_field(AccessRuleSerializer(many=True))
class AccessRulesField(serializers.JSONField):
    pass


# --- the tool -----------------------------------------------------------------------------------


class ToolSerializer(OutputSerializer):
    """ToolDefinition as every endpoint returns it (docs/api.md, "Tools"). Only the variant fields of the tool's
    `executionType` appear; optional fields that are unset are left out."""

    OMIT_WHEN_NULL = ("accessRules", "approval", "testType", "auth")

    toolId = serializers.CharField(source="tool_id", help_text="<name>@<version>, e.g. weather@2")
    executionType = serializers.ChoiceField(source="execution_type", choices=ExecutionType.choices)
    name = serializers.CharField()
    displayName = serializers.CharField(source="display_name")
    description = serializers.CharField(help_text="Fewer than 500 characters.")
    supportedAgentFrameworks = serializers.ListField(source="supported_agent_frameworks", child=serializers.CharField())
    version = serializers.IntegerField(read_only=True, help_text="The number after @ in toolId.")
    executionTimeout = serializers.FloatField(source="execution_timeout", help_text="Seconds; default 30, at most 900.")
    functionSchema = FunctionSchemaField(source="function_schema")
    tags = serializers.DictField(child=serializers.CharField())
    lifecycle: serializers.Field = serializers.SerializerMethodField()  # ToolWriteSerializer documents its input
    accessRules = AccessRulesField(source="access_rules", required=False)
    approval = serializers.JSONField(
        required=False, help_text='{required: true | "<CEL over user, customData, args, tool>", timeoutSeconds?, approverRoles?}'
    )
    testType = serializers.ChoiceField(source="test_type", choices=TestType.choices, required=False)
    functionArn = serializers.CharField(source="function_arn", required=False, help_text="function tools: local:<name> or a Lambda ARN")
    url = serializers.CharField(required=False, help_text="mcp tools: the server's Streamable HTTP address")
    auth: serializers.Field = serializers.SerializerMethodField()
    code = serializers.CharField(required=False, help_text="inline tools: a JavaScript function expression (event, params) => ...")
    createdBy = serializers.CharField(source="created_by", read_only=True)
    lastModifiedBy = serializers.CharField(source="last_modified_by", read_only=True)
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)

    @extend_schema_field(ToolLifecycleSerializer)
    def get_lifecycle(self, tool: ToolDefinition) -> dict[str, Any]:
        lifecycle: dict[str, Any] = {"status": tool.lifecycle_status}
        if tool.deprecation_date is not None:
            lifecycle["deprecationDate"] = serializers.DateTimeField().to_representation(tool.deprecation_date)
        if tool.migration_path:
            lifecycle["migrationPath"] = tool.migration_path
        return lifecycle

    @extend_schema_field(McpAuthSerializer(required=False))
    def get_auth(self, tool: ToolDefinition) -> dict[str, str] | None:
        # The secret and the cached token never leave the service (docs/api.md, "Tools").
        if not tool.auth:
            return None
        return {"clientId": tool.auth.get("clientId", ""), "clientSecret": REDACTED, "tokenUrl": tool.auth.get("tokenUrl", "")}

    def to_representation(self, tool: ToolDefinition) -> dict[str, Any]:
        data = super().to_representation(tool)
        own = VARIANT_FIELDS.get(tool.execution_type, ())
        for fields in VARIANT_FIELDS.values():
            for field in fields:
                if field not in own:
                    data.pop(field, None)
        timeout = data.get("executionTimeout")
        if isinstance(timeout, float) and timeout.is_integer():
            data["executionTimeout"] = int(timeout)
        return data


class ToolWriteSerializer(ToolSerializer):
    """Documentation of a create or update payload: as ToolSerializer, plus the writable nested
    objects. Parsing and validation are tools.validation's (this serializer never runs on data)."""

    lifecycle = ToolLifecycleSerializer(required=False)
    auth = McpAuthSerializer(required=False)


@functools.cache
def field_sources() -> dict[str, str]:
    """wire name → model field, for the fields that map one to one."""
    return {
        name: field.source
        for name, field in ToolSerializer().fields.items()
        if not isinstance(field, serializers.SerializerMethodField) and not field.read_only and field.source is not None
    }


def model_values(clean: Mapping[str, Any]) -> dict[str, Any]:
    """A definition cleaned by tools.validation.clean_tool → ToolDefinition field values.

    Fields of other variants than the tool's are blanked. The auth secret is kept as sent: the
    caller (tools.services) decides about the cached token.
    """
    values: dict[str, Any] = {
        "function_arn": "",
        "url": "",
        "code": "",
        "auth": None,
        "access_rules": None,
        "approval": None,
        "test_type": None,
    }
    for wire, source in field_sources().items():
        if clean.get(wire) is not None:
            values[source] = clean[wire]
    values["version"] = clean["version"]
    values["auth"] = dict(clean["auth"]) if clean.get("auth") else None
    lifecycle = clean["lifecycle"]
    values["lifecycle_status"] = lifecycle["status"]
    values["deprecation_date"] = lifecycle.get("deprecationDate")
    values["migration_path"] = lifecycle.get("migrationPath", "")
    return values


def definition_from_model_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Model field values (e.g. a Django admin form's cleaned_data) → a wire definition for
    clean_tool. Only the fields present in `values` appear; blank text becomes absent (None)."""
    definition: dict[str, Any] = {}
    for wire, source in field_sources().items():
        if source in values:
            value = values[source]
            definition[wire] = None if value == "" else value
    if "lifecycle_status" in values:
        definition["lifecycle"] = {
            "status": values["lifecycle_status"],
            "deprecationDate": values.get("deprecation_date"),
            "migrationPath": values.get("migration_path") or None,
        }
    if "auth" in values:
        definition["auth"] = values["auth"]
    return definition


def stored_definition(tool: ToolDefinition) -> dict[str, Any]:
    """The stored tool in wire shape *with* its auth secret (never rendered; the base an update is
    merged onto). Service stamps and the derived version are left out."""
    definition = dict(ToolSerializer(tool).data)
    for stamp in ("createdBy", "lastModifiedBy", "createdAt", "updatedAt", "version"):
        definition.pop(stamp, None)
    if tool.auth:
        definition["auth"] = {key: value for key, value in tool.auth.items() if key != "token"}
    return definition
