"""OpenAPI post-processing: every operation documents the failure envelope and its statuses."""

from __future__ import annotations

import copy
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

# What a JSON field holds when no validator says more: any JSON value but null (DRF's JSONField
# refuses null unless allow_null).
ANY_JSON = {"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}, {"type": "number"}, {"type": "boolean"}]}


def envelope(name: str, **fields: serializers.Field) -> serializers.Serializer:
    """The schema of a success answer: `{success: true, **fields}` (docs/api.md, "Envelope"), named
    `name` among the schema's components. The failure envelope is added to every operation by
    AutoSchema."""
    return inline_serializer(name, {"success": serializers.BooleanField(), **fields})


def documented(schema: dict[str, Any]) -> Any:
    """Give a validator of a JSON field the OpenAPI schema of what it accepts, so that the field is
    documented by the function that checks it: `@documented({"type": "object"})`."""

    def attach(validator: Any) -> Any:
        validator.openapi_schema = schema
        return validator

    return attach


def one_of_values(*values: Any) -> dict[str, Any]:
    """`enum` for a rule over several fields (REQUEST_SCHEMA_RULES), inside `allOf`: drf-spectacular's
    enum hook names choice sets by field and component, and would merge it with the field's own."""
    return {"allOf": [{"enum": list(values)}]}


_STRING_FIELDS = {"CharField", "StrictCharField"}
NO_NUL = "^[^\\x00]*$"
NOT_BLANK = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"
_BLANK = {"type": "string", "maxLength": 0}


class AutoSchema(SpectacularAutoSchema):
    """SPEC.md's DELETE endpoints of tag definitions and directives carry a JSON body;
    drf-spectacular documents request bodies for POST, PUT and PATCH only, so DELETE borrows
    POST's handling."""

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions: bool = False) -> Any:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and type(field).__name__ in _STRING_FIELDS and schema.get("type") == "string":
            # A string validator's own schema (`@documented({"pattern": ...})`) says what it checks.
            for validator in field.validators:
                schema = {**schema, **getattr(validator, "openapi_schema", {})}
        patterned = "pattern" in schema or any(isinstance(v, RegexValidator) for v in field.validators)
        if direction == "request" and type(field).__name__ in _STRING_FIELDS and schema.get("type") == "string" and not patterned:
            # DRF's CharField refuses NUL characters (ProhibitNullCharactersValidator); a RegexValidator's own pattern says more.
            # Trimmed and not allowed blank, it refuses whitespace alone too.
            schema = {**schema, "pattern": NOT_BLANK if field.trim_whitespace and not field.allow_blank else NO_NUL}
        if isinstance(field, serializers.JSONField) and not set(schema) - {"description", "readOnly", "writeOnly", "nullable"}:
            given = next((v.openapi_schema for v in field.validators if hasattr(v, "openapi_schema")), ANY_JSON)
            schema = {**given, **schema}
            if field.allow_null:
                schema["nullable"] = True
        return schema

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        """drf-spectacular gives a blank-allowed string with a pattern `oneOf: [pattern, blank]`;
        with the NUL pattern alone "" matches both branches, which oneOf refuses: one schema then."""
        super()._insert_field_validators(field, schema)
        branches = schema.get("oneOf")
        nul_only = bool(branches) and branches[0].get("pattern") == NO_NUL and not {"minLength", "format"} & set(branches[0])
        if nul_only and len(branches) == 2 and branches[1] == _BLANK:
            del schema["oneOf"]
            schema.update(branches[0])

    def _is_list_view(self, serializer: Any = None) -> bool:
        """Never: every answer of this API is the envelope object, a list answer included."""
        return False

    def _map_basic_serializer(self, serializer: Any, direction: str) -> Any:
        """Fields a serializer leaves out of an answer when unset (`OPTIONAL_IN_RESPONSES`) are not
        required there; a request serializer that refuses unknown fields (`REFUSES_UNKNOWN_FIELDS`) is closed,
        and the rules its `validate` adds over several fields are stated by `REQUEST_SCHEMA_RULES`."""
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and getattr(serializer, "REFUSES_UNKNOWN_FIELDS", False):
            schema["additionalProperties"] = False
        if direction == "request":
            schema.update(copy.deepcopy(getattr(serializer, "REQUEST_SCHEMA_RULES", {})))  # drf-spectacular's hooks edit in place
        optional = set(getattr(serializer, "OPTIONAL_IN_RESPONSES", ()))
        if optional and "required" in schema:
            schema["required"] = [name for name in schema["required"] if name not in optional]
            if not schema["required"]:
                del schema["required"]
        return schema

    def _get_request_body(self, direction: str = "request") -> Any:
        if self.method != "DELETE":
            return super()._get_request_body(direction)
        self.method = "POST"
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"


ERROR_ENVELOPE = {
    "type": "object",
    "description": "SPEC.md failure envelope. `code` is one of the codes in docs/api.md.",
    "properties": {
        "success": {"type": "boolean", "enum": [False]},
        "error": {"type": "string", "description": "What went wrong; for 400 it names the field and the rule."},
        "code": {
            "type": "string",
            "enum": [
                "INVALID_REQUEST",
                "AUTHENTICATION_REQUIRED",
                "INSUFFICIENT_PERMISSIONS",
                "NOT_FOUND",
                "INVALID_AGENT_ID",
                "INVALID_CHAT_APP_ID",
                "INVALID_SESSION_ID",
                "METHOD_NOT_ALLOWED",
                "NOT_ACCEPTABLE",
                "PAYLOAD_TOO_LARGE",
                "UNSUPPORTED_MEDIA_TYPE",
                "RATE_LIMIT_EXCEEDED",
                "INTERNAL_ERROR",
                "SERVICE_UNAVAILABLE",
            ],
        },
    },
    "required": ["success", "error"],
}

SUCCESS = {"type": "object", "properties": {"success": {"type": "boolean", "enum": [True]}}, "required": ["success"]}

_RATE_HEADERS = {
    "X-RateLimit-Limit": {"schema": {"type": "integer"}, "description": "Requests allowed in the current window."},
    "X-RateLimit-Remaining": {"schema": {"type": "integer"}, "description": "Requests left in the current window."},
    "X-RateLimit-Reset": {"schema": {"type": "integer"}, "description": "Unix time (seconds) when the window resets."},
}

_ERRORS = {
    "400": "Invalid parameters (code INVALID_REQUEST); the message names the field and the rule.",
    "401": "Authentication required: a bearer JWT or the `session` cookie.",
    "403": "Insufficient permissions (code INSUFFICIENT_PERMISSIONS).",
    "404": "The resource does not exist.",
    "405": "The path exists, the method does not (code METHOD_NOT_ALLOWED).",
    "409": "Another request is changing the same record at this moment; send it again.",
    "413": "The body is larger than the server accepts (code PAYLOAD_TOO_LARGE).",
    "415": "The body is not of a media type the endpoint takes (code UNSUPPORTED_MEDIA_TYPE).",
    "429": "Rate limit exceeded (code RATE_LIMIT_EXCEEDED); see `Retry-After`.",
    "500": "Internal error (code INTERNAL_ERROR); no details are disclosed.",
    "503": "The database or the cache cannot be reached, or the server is shutting down (code SERVICE_UNAVAILABLE); see `Retry-After`.",
}
# Converse only: the model provider failed (docs/api.md).
_CONVERSE_ERRORS = {"502": "The model provider failed (code INTERNAL_ERROR); the message names the model and the cause."}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOK."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorEnvelope"] = ERROR_ENVELOPE
    ref = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for path, path_item in result.get("paths", {}).items():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            # Every DELETE of this API answers 200 with the envelope (SPEC.md), not DRF's default 204.
            if method == "delete" and "204" in responses and "200" not in responses:
                del responses["204"]
                responses["200"] = {"description": "Deleted.", "content": {"application/json": {"schema": SUCCESS}}}
            for response in operation["responses"].values():
                response.setdefault("headers", {}).update(_RATE_HEADERS)
            errors = {**_ERRORS, **(_CONVERSE_ERRORS if path == "/api/chat/converse" else {})}
            for status, description in errors.items():
                operation["responses"].setdefault(
                    status,
                    {"description": description, "headers": dict(_RATE_HEADERS), "content": {"application/json": {"schema": ref}}},
                )
    return result
