"""Serializer fields shared by the apps."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

# Messages that read after the field name: "agent.basePrompt: is required".
STRING_MESSAGES = {
    "required": "is required",
    "null": "must not be null",
    "blank": "must not be blank",
    "invalid": "must be a string",
    "max_length": "must be at most {max_length} characters",
}


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of turning them into strings."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["error_messages"] = {**STRING_MESSAGES, **kwargs.get("error_messages", {})}
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)
