"""The OpenAPI schema generator's class (settings.REST_FRAMEWORK's DEFAULT_SCHEMA_CLASS).

Apart from chatplatform.api.schema, which every serializer imports: drf-spectacular's generator
(and DRF's views and test client through it) is imported when a schema is generated, not when
Django starts.
"""

from __future__ import annotations

import copy
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

# What a JSON field holds when no validator says more: any JSON value but null (DRF's JSONField
# refuses null unless allow_null).
ANY_JSON = {"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}, {"type": "number"}, {"type": "boolean"}]}
_STRING_FIELDS = {"CharField", "StrictCharField"}
NO_NUL = "^[^\\x00]*$"
NOT_BLANK = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"
_BLANK = {"type": "string", "maxLength": 0}


class AutoSchema(SpectacularAutoSchema):
    """The DELETE endpoints of tag definitions and directives carry a JSON body;
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
        branches = schema.get("oneOf") or []
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
