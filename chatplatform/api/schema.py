"""The OpenAPI schema's helpers for the apps' serializers (`envelope`, `documented`, `one_of_values`) and its
post-processing: every operation documents the failure envelope and its statuses.

Light on purpose: every serializer imports it when Django starts; the schema generator's own
class, which needs drf-spectacular's, is chatplatform.api.autoschema.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers


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


ERROR_ENVELOPE = {
    "type": "object",
    "description": "The failure envelope. `code` is one of the codes in docs/api.md.",
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
            # Every DELETE of this API answers 200 with the envelope (docs/api.md, "Envelope"), not DRF's default 204.
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
