"""The JSON shape of a tool definition (docs/api.md, "Tools", "Limits"), declared once as a JSON
Schema and checked by chatplatform.jsonshape; its `x-messages` word each rule. What is not about the
shape (toolId's parts, CEL conditions, URLs, function references, JavaScript, lifecycle transitions)
is tools.validation's code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from chatplatform.api.fields import ACCESS_RULES_SCHEMA
from tools.models import ExecutionType, LifecycleStatus, TestType

NAME_PATTERN = re.compile(r"([0-9a-zA-Z][_-]?){1,100}")  # docs/api.md, "Limits"; matched whole (fullmatch)
NAME_MAX_LENGTH = 100  # docs/api.md, "Limits": the pattern alone would allow 200
DISPLAY_NAME_MAX_LENGTH = 200
DESCRIPTION_LIMIT = 500  # docs/api.md, "Limits": fewer than 500 characters
MAX_EXECUTION_TIMEOUT = 900  # a tool call holds a turn open; 15 minutes is the ceiling (also Lambda's)
MAX_PARAMETER_DEPTH = 10
MAX_URL_LENGTH = 2000
SUPPORTED_AGENT_FRAMEWORKS = ["hosted"]
PARAMETER_TYPES = ("string", "number", "boolean", "object", "array")
ACCESS_EFFECTS = ("allow", "deny")
COMMON_FIELDS = (
    "toolId",
    "executionType",
    "name",
    "displayName",
    "description",
    "supportedAgentFrameworks",
    "version",
    "executionTimeout",
    "functionSchema",
    "tags",
    "lifecycle",
    "accessRules",
    "approval",
    "testType",
)
VARIANT_FIELDS: dict[str, tuple[str, ...]] = {
    ExecutionType.FUNCTION: ("functionArn",),
    ExecutionType.MCP: ("url", "auth"),
    ExecutionType.INLINE: ("code",),
}
# Set by the service (docs/api.md, "Who may read what": stamps sent by clients are ignored), so a GET result can be sent back.
SERVICE_FIELDS = ("createdBy", "lastModifiedBy", "createdAt", "updatedAt")
KNOWN_FIELDS = frozenset(COMMON_FIELDS + SERVICE_FIELDS + tuple(f for fields in VARIANT_FIELDS.values() for f in fields))
MAX_APPROVAL_SECONDS = 30 * 86400
AUTH_FIELDS = ("clientId", "clientSecret", "tokenUrl")


def _says(rule: str, *keywords: str) -> dict[str, str]:
    """`x-messages` giving one rule for several keywords (chatplatform.jsonshape)."""
    return dict.fromkeys(keywords, rule)


def _text(max_length: int | None = None, too_long: str | None = None) -> dict[str, Any]:
    """A required non-blank string (docs/api.md, "Limits"): absent or "" is "is required"."""
    node: dict[str, Any] = {"type": "string", "minLength": 1, "pattern": r"\S"}
    messages = {"type": "must be a string", "pattern": "must not be blank", **_says("is required", "minLength", "required")}
    if max_length is not None:
        node["maxLength"] = max_length
        messages["maxLength"] = too_long or f"must be at most {max_length} characters"
    return {**node, "x-messages": messages}


def _forbidden(message: str) -> dict[str, Any]:
    return {"not": {}, "x-messages": {"not": message}}


def _object(properties: dict[str, Any], required: Iterable[str], shape: str, unknown: str, **more: Any) -> dict[str, Any]:
    """An object of these properties and no other (`more`: keywords checked before the properties)."""
    return {
        "type": "object",
        **more,
        "properties": properties,
        "required": list(required),
        "additionalProperties": _forbidden(unknown),  # not `false`: each unknown key is named
        "x-messages": {"type": shape},
    }


_NAME_RULE = f"must match ^{NAME_PATTERN.pattern}$ (letters and digits, each optionally followed by one _ or -)"
# \Z, not $: a JSON Schema pattern is searched, and $ would let a trailing newline through.
_NAME = {**_text(NAME_MAX_LENGTH), "allOf": [{"pattern": rf"^(?:{NAME_PATTERN.pattern})\Z", "x-messages": {"pattern": _NAME_RULE}}]}
_PARAMETER_NAMES_RULE = {"pattern": "must not be blank", "maxLength": f"must be at most {NAME_MAX_LENGTH} characters"}


def _parameter_names(depth: int) -> dict[str, Any]:
    """A map of parameter name to ParameterDefinition (docs/api.md, "Tools")."""
    names = {"pattern": r"\S", "maxLength": NAME_MAX_LENGTH}
    messages = {keyword: f"parameter names {rule}" for keyword, rule in _PARAMETER_NAMES_RULE.items()}
    return {"type": "object", "propertyNames": {**names, "x-messages": messages}, "additionalProperties": _parameter(depth)}


def _only_for(kind: str, key: str, value: dict[str, Any], required: str) -> dict[str, Any]:
    """`key` is required (and checked as `value`) for a parameter of type `kind`, refused for any other."""
    return {
        "if": {"properties": {"type": {"const": kind}}, "required": ["type"]},
        "then": {"properties": {key: value}, "required": [key], "x-messages": {"required": required}},
        "else": {"properties": {key: _forbidden(f"is only allowed for type {kind}")}},
    }


def _parameter(depth: int) -> dict[str, Any]:
    """ParameterDefinition at `depth`, unrolled down to MAX_PARAMETER_DEPTH (a schema has no depth counter)."""
    if depth > MAX_PARAMETER_DEPTH:
        return _forbidden(f"must not nest deeper than {MAX_PARAMETER_DEPTH} levels")
    strings = "must be a non-empty list of strings"
    properties = "is required for type object (a map of property name to parameter definition)"
    items = "is required for type array (the parameter definition of each element)"
    return _object(
        {
            "description": {"type": "string", "x-messages": _says("is required (a string)", "type", "required")},
            "type": {"enum": list(PARAMETER_TYPES), "x-messages": {"required": f"must be one of {', '.join(PARAMETER_TYPES)}"}},
            "required": {"type": "boolean", "x-messages": _says("is required (true or false)", "type", "required")},
            "enum": {
                "type": "array",
                "minItems": 1,
                "items": {"type": "string"},
                "uniqueItems": True,
                "x-messages": {**_says(strings, "type", "minItems", "items"), "uniqueItems": "must not repeat a value"},
            },
            "items": {},
            "properties": {},
        },
        ("description", "type", "required"),
        "must be a parameter definition {description, type, required}",
        "is not a field of a parameter definition",
        allOf=[  # before the properties: "enum is only allowed for type string" before what enum holds
            {
                "if": {"properties": {"type": {"const": "string"}}},
                "else": {"properties": {"enum": _forbidden("is only allowed for type string")}},
            },
            _only_for("array", "items", _parameter(depth + 1), items),
            _only_for("object", "properties", {**_parameter_names(depth + 1), "x-messages": {"type": properties}}, properties),
        ],
    )


_FUNCTION_SCHEMA_RULE = "must be a non-empty list of function definitions"
_PARAMETERS_RULE = "is required (a map of parameter name to parameter definition; {} for none)"
_APPROVAL_REQUIRED_RULE = "is required: true, false, or a CEL condition over user, customData, args and tool"
_TIMEOUT_RULE = "must be a positive number of seconds"
_TAGS_RULE = "must be a map of string to string"
_APPROVAL_SECONDS_RULE = f"must be a whole number of seconds from 1 to {MAX_APPROVAL_SECONDS}"
_VARIANT_REQUIRED = {ExecutionType.FUNCTION: "functionArn", ExecutionType.MCP: "url", ExecutionType.INLINE: "code"}

# The JSON shape of a whole definition (chatplatform.jsonshape); the rules that are not about shape
# (toolId's parts, CEL, URLs, function references, JavaScript, lifecycle transitions) are clean_tool's.
TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{field: {} for field in KNOWN_FIELDS},
        "handler": _forbidden("is a runtime function and is never stored; send the JavaScript source as code"),
        "toolId": _text(),
        "executionType": {
            "enum": list(ExecutionType.values),
            "x-messages": {"required": f"must be one of {', '.join(ExecutionType.values)}"},
        },
        "name": _NAME,
        "displayName": _text(DISPLAY_NAME_MAX_LENGTH),
        "description": _text(DESCRIPTION_LIMIT - 1, f"must be fewer than {DESCRIPTION_LIMIT} characters"),
        "supportedAgentFrameworks": {
            "const": SUPPORTED_AGENT_FRAMEWORKS,
            "x-messages": {
                "const": "must be ['hosted']: hosted is the only supported agent framework",
                "required": "is required: ['hosted']",
            },
        },
        "functionSchema": {
            "type": "array",
            "minItems": 1,
            "items": _object(
                {
                    "name": _NAME,
                    "description": _text(),
                    "parameters": {**_parameter_names(1), "x-messages": _says(_PARAMETERS_RULE, "type", "required")},
                },
                ("name", "description", "parameters"),
                "must be a function definition {name, description, parameters}",
                "is not a field of a function definition",
            ),
            "x-messages": {
                **_says(_FUNCTION_SCHEMA_RULE, "type", "minItems"),
                "required": "is required when supportedAgentFrameworks includes hosted",
            },
        },
        "executionTimeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": MAX_EXECUTION_TIMEOUT,
            "x-messages": {
                **_says(_TIMEOUT_RULE, "type", "exclusiveMinimum"),
                "maximum": f"must be at most {MAX_EXECUTION_TIMEOUT} seconds",
            },
        },
        "tags": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "x-messages": _says(_TAGS_RULE, "type", "additionalProperties"),
        },
        "lifecycle": _object(
            {
                "status": {
                    "enum": list(LifecycleStatus.values),
                    "x-messages": {"required": f"must be one of {', '.join(LifecycleStatus.values)}"},
                },
                "deprecationDate": {},  # a string or, from the Django admin form, a datetime: parse_iso8601's
                "migrationPath": {"type": "string", "x-messages": {"type": "must be a string (instructions or a new tool id)"}},
            },
            ("status",),
            "must be an object {status, deprecationDate?, migrationPath?}",
            "is not a field of a tool lifecycle",
        ),
        "accessRules": ACCESS_RULES_SCHEMA,
        "approval": _object(
            {
                "required": {"type": ["boolean", "string"], "x-messages": _says(_APPROVAL_REQUIRED_RULE, "type", "required")},
                "timeoutSeconds": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_APPROVAL_SECONDS,
                    "x-messages": _says(_APPROVAL_SECONDS_RULE, "type", "minimum", "maximum"),
                },
                "approverRoles": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "x-messages": _says("must be a list of role names", "type", "items"),
                },
            },
            ("required",),
            "must be an object {required, timeoutSeconds?, approverRoles?}",
            "is not a field of approval",
        ),
        "testType": {"enum": list(TestType.values), "x-messages": {"enum": f"must be {' or '.join(TestType.values)} when present"}},
        "functionArn": _text(500),
        "url": {"type": "string", "x-messages": {"type": "must be an http or https URL", "required": "is required"}},
        "code": {
            "type": "string",
            "minLength": 1,
            "x-messages": {"type": "must be a string (JavaScript source)", **_says("is required", "minLength", "required")},
        },
        "auth": _object(
            {
                "token": _forbidden("is managed by the service (the cached access token) and cannot be set"),
                **{key: _text(MAX_URL_LENGTH) for key in AUTH_FIELDS},
            },
            AUTH_FIELDS,
            "must be an object {clientId, clientSecret, tokenUrl}",
            "is not a field of auth (clientId, clientSecret, tokenUrl)",
        ),
    },
    "required": ["toolId", "executionType", "name", "displayName", "description", "supportedAgentFrameworks", "functionSchema"],
    "allOf": [
        {"if": {"properties": {"executionType": {"const": kind}}, "required": ["executionType"]}, "then": {"required": [field]}}
        for kind, field in _VARIANT_REQUIRED.items()
    ],
    "additionalProperties": _forbidden("is not a field of a tool definition"),
}
