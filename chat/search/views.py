"""Session search for operators (docs/api.md, "Session search"): every filter family, sorted, scrolled."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat.search.selectors import SessionSearch, sessions_extras, sessions_search
from chat.search.serializers import SessionSearchHitSerializer, SessionSearchRequestSerializer
from chatplatform.api.pagination import page_size
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, checked, ok


class SessionSearchViewSet(AdminApiViewSet):
    """`POST /api/chat-admin/sessions/search`."""

    @extend_schema(
        operation_id="admin_sessions_search",
        request=SessionSearchRequestSerializer,
        responses=envelope(
            "SessionSearchResponse",
            sessions=SessionSearchHitSerializer(many=True),
            total=serializers.IntegerField(),
            pageSize=serializers.IntegerField(),
            scrollId=serializers.CharField(required=False),
        ),
    )
    def search(self, request: Request) -> Response:
        body = checked(SessionSearchRequestSerializer, request.data)
        filters = body.get("search") or {}
        # size and scrollId are top-level, also accepted inside `search` (docs/api.md).
        size = page_size(body.get("size", filters.get("size")))
        scroll_id = body.get("scrollId") or filters.get("scrollId")
        criteria = {key: value for key, value in filters.items() if key not in ("size", "scrollId", "includeInsights", "includeFeedback")}
        # A continuation may send its scrollId alone; the token carries the search.
        search = SessionSearch.from_request(criteria) if criteria or not scroll_id else None
        sessions, total, next_scroll, _ = sessions_search(search=search, size=size, scroll_id=scroll_id)
        include_insights, include_feedback = bool(filters.get("includeInsights")), bool(filters.get("includeFeedback"))
        extras = sessions_extras(sessions, insights=include_insights, feedback=include_feedback)
        context = {"include_insights": include_insights, "include_feedback": include_feedback, "extras": extras}
        rows = SessionSearchHitSerializer(sessions, many=True, context=context).data
        fields: dict[str, Any] = {"sessions": rows, "total": total, "pageSize": size}
        if next_scroll:
            fields["scrollId"] = next_scroll
        return ok(**fields)
