"""OpenAPI post-processing: every operation documents the failure envelope and its statuses."""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema


class AutoSchema(SpectacularAutoSchema):
    """SPEC.md's DELETE endpoints of tag definitions and directives carry a JSON body;
    drf-spectacular documents request bodies for POST, PUT and PATCH only, so DELETE borrows
    POST's handling."""

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
                "RATE_LIMIT_EXCEEDED",
                "INTERNAL_ERROR",
            ],
        },
    },
    "required": ["success", "error"],
}

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
    "429": "Rate limit exceeded (code RATE_LIMIT_EXCEEDED); see `Retry-After`.",
    "500": "Internal error (code INTERNAL_ERROR); no details are disclosed.",
}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOK."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ErrorEnvelope"] = ERROR_ENVELOPE
    ref = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for response in operation["responses"].values():
                response.setdefault("headers", {}).update(_RATE_HEADERS)
            for status, description in _ERRORS.items():
                operation["responses"].setdefault(
                    status,
                    {"description": description, "headers": dict(_RATE_HEADERS), "content": {"application/json": {"schema": ref}}},
                )
    return result
