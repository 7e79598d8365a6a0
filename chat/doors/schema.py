"""The OpenAPI schema of the doors that are not DRF views (docs/api.md)."""

from __future__ import annotations

from typing import Any

from chat.doors.converse import converse_openapi


def document_doors(endpoints: list[tuple[str, str, str, Any]], **kwargs: Any) -> list[tuple[str, str, str, Any]]:
    """drf-spectacular preprocessing hook: converse in the schema, described by `converse_openapi`."""
    return [*endpoints, ("/api/chat/converse", r"^api/chat/converse$", "POST", converse_openapi)]
