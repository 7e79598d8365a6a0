"""The OpenAPI schema of the doors that are not DRF views (docs/api.md)."""

from __future__ import annotations

from typing import Any

from chat.doors.converse import converse_openapi, regenerate_openapi
from chat.doors.sessions import approvals_openapi, decision_openapi, stop_openapi, stream_openapi

# (path, its pattern, method, the DRF function that carries its schema)
DOORS = [
    ("/api/chat/converse", r"^api/chat/converse$", "POST", converse_openapi),
    ("/api/chat/sessions/{sessionId}/stream", r"^api/chat/sessions/(?P<sessionId>[^/]+)/stream$", "GET", stream_openapi),
    (
        "/api/chat/sessions/{sessionId}/messages/{messageId}/regenerate",
        r"^api/chat/sessions/(?P<sessionId>[^/]+)/messages/(?P<messageId>[^/]+)/regenerate$",
        "POST",
        regenerate_openapi,
    ),
    ("/api/chat/sessions/{sessionId}/stop", r"^api/chat/sessions/(?P<sessionId>[^/]+)/stop$", "POST", stop_openapi),
    ("/api/chat/sessions/{sessionId}/approvals", r"^api/chat/sessions/(?P<sessionId>[^/]+)/approvals$", "GET", approvals_openapi),
    (
        "/api/chat/sessions/{sessionId}/approvals/{approvalId}",
        r"^api/chat/sessions/(?P<sessionId>[^/]+)/approvals/(?P<approvalId>[^/]+)$",
        "POST",
        decision_openapi,
    ),
]


def document_doors(endpoints: list[tuple[str, str, str, Any]], **kwargs: Any) -> list[tuple[str, str, str, Any]]:
    """drf-spectacular preprocessing hook: the doors that are async Django views, described by the functions of DOORS."""
    return [*endpoints, *DOORS]
