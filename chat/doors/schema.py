"""The OpenAPI schema of the doors that are not DRF views (docs/api.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.generators import EndpointEnumerator

from chat.doors.converse import ConverseView, RegenerateView, converse_openapi, regenerate_openapi
from chat.doors.sessions import (
    ApprovalDecisionView,
    ApprovalsView,
    SessionStopView,
    SessionStreamView,
    approvals_openapi,
    decision_openapi,
    stop_openapi,
    stream_openapi,
)

Endpoint = tuple[str, str, str, Any]

# Each async door view under /api/ and the DRF function beside it that carries its schema.
DOCUMENTED_BY: dict[Any, Any] = {
    ConverseView: converse_openapi,
    RegenerateView: regenerate_openapi,
    SessionStreamView: stream_openapi,
    SessionStopView: stop_openapi,
    ApprovalsView: approvals_openapi,
    ApprovalDecisionView: decision_openapi,
}


def document_doors(endpoints: list[Endpoint], **kwargs: Any) -> list[Endpoint]:
    """drf-spectacular preprocessing hook: the door views of DOCUMENTED_BY, found on their paths in
    the URLconf as drf-spectacular finds DRF views, each described by its function."""
    return [*endpoints, *_doors(get_resolver().url_patterns, "", EndpointEnumerator())]


def _doors(patterns: list[Any], prefix: str, enumerator: EndpointEnumerator) -> Iterator[Endpoint]:
    for pattern in patterns:
        path_regex = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _doors(pattern.url_patterns, path_regex, enumerator)
        elif isinstance(pattern, URLPattern) and (described := DOCUMENTED_BY.get(getattr(pattern.callback, "view_class", None))):
            for method in enumerator.get_allowed_methods(described):
                yield enumerator.get_path_from_regex(path_regex), path_regex, method, described
