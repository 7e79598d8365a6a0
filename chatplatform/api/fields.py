"""Serializer fields shared by the apps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rest_framework import serializers

from chatplatform.access import InvalidCondition, compile_condition
from chatplatform.api.schema import documented
from chatplatform.jsonshape import Shape, ShapeError

# Messages that read after the field name: "agent.basePrompt: is required".
STRING_MESSAGES = {
    "required": "is required",
    "null": "must not be null",
    "blank": "must not be blank",
    "invalid": "must be a string",
    "max_length": "must be at most {max_length} characters",
}


def whole_number(text: str, *, max_digits: int = 18) -> int | None:
    """`text` as a non-negative integer when it is ASCII digits only, else None. `str.isdigit` takes
    `²` and other characters `int()` refuses, and `int()` refuses more than 4,300 digits: both were
    500s (docs/api.md, "Envelope": a query parameter's bad value is a 400 naming it)."""
    text = text.strip()
    if not text or not text.isascii() or not text.isdecimal() or len(text) > max_digits:
        return None
    return int(text)


class WholeNumberField(serializers.IntegerField):
    """An integer field that takes ASCII digits only: DRF's takes `٣` (Arabic-Indic three), which
    `page_size` and the rest of the API refuse (docs/api.md, "Pagination")."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and not data.isascii():
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of turning them into strings."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["error_messages"] = {**STRING_MESSAGES, **kwargs.get("error_messages", {})}
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A boolean field that takes true and false only, not DRF's "yes", 1 or "on"."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


def error_at(path: tuple[str | int, ...], message: str) -> serializers.ValidationError:
    """A ValidationError nested along `path`, so the envelope reads `field[1].key: message`."""
    detail: Any = [message]
    for step in reversed(path):
        detail = [*([{}] * step), detail] if isinstance(step, int) else {step: detail}
    return serializers.ValidationError(detail)


def shaped(schema: dict[str, Any]) -> Callable[[Any], Any]:
    """A validator of a JSON field: the document checked against `schema` (chatplatform.jsonshape), the
    fault reported at its path inside the field, and the field documented by the same schema."""
    shape = Shape(schema)

    @documented(schema)
    def check(value: Any) -> Any:
        try:
            shape.check(value)
        except ShapeError as error:
            raise error_at(error.parts, error.message) from None
        return value

    return check


ACCESS_RULE_KEYS = frozenset({"condition", "effect", "order", "description"})


ACCESS_RULES_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "condition": {"type": "string", "nullable": True, "x-messages": {"type": "must be a string (a CEL expression)"}},
            "effect": {
                "type": "string",
                "enum": ["allow", "deny"],
                "x-messages": {"type": "must be allow or deny", "enum": "must be allow or deny"},
            },
            "order": {"type": "number", "nullable": True},
            "description": {"type": "string", "nullable": True},
        },
        "required": ["effect"],
        "additionalProperties": False,
        "x-messages": {
            "required": "must be allow or deny",
            "additionalProperties": f"is not a known field (allowed: {', '.join(sorted(ACCESS_RULE_KEYS))})",
        },
    },
    "x-messages": {"type": "must be a list of access rules"},
}
ACCESS_RULES_SHAPE = Shape(ACCESS_RULES_SCHEMA)
_access_rules_shape = shaped(ACCESS_RULES_SCHEMA)


@documented(ACCESS_RULES_SCHEMA)
def check_access_rules(value: Any) -> list[dict[str, Any]]:
    """AccessRule (docs/access-rules.md): `{condition?, effect, order?, description?}`; conditions must be valid CEL.
    The validator of every `accessRules` field written through a serializer (agents, knowledge bases)."""
    _access_rules_shape(value)
    for index, rule in enumerate(value):
        condition = rule.get("condition")
        if condition is not None and condition.strip():
            try:
                compile_condition(condition)
            except InvalidCondition as exc:
                raise error_at((index, "condition"), str(exc))
    return value
