"""`POST /api/chat/converse` (docs/api.md, "Converse"): a JSON answer, or with `Accept:
text/event-stream` the turn's events as Server-Sent Events. Both credentials: a bearer token, or
the `session` cookie with its CSRF token. Everything the turn decides is `chat.turn`'s: this view
only reads the request, admits it (as the WebSocket does) and writes the events.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view

from chat import turn
from chat.doors.http import DoorView, caller_of, wants_events
from chat.turn.serializers import ConverseRequestSerializer, ConverseResponseSerializer
from chatplatform.api.errors import ApiError


class ConverseView(DoorView):
    async def post(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        try:
            admitted = await turn.admit(caller_of(request), self.body(request), request.content_type or "")
        except turn.Refused as refused:
            return self.refuse(refused.error, refused.budget)
        except ApiError as exc:
            return self.refuse(exc)
        events = turn.start(admitted).reader()
        if not wants_events(request):
            try:
                return self.answer(await turn.collect(events), admitted.budget)
            except Exception as exc:
                return self.refuse(exc, admitted.budget)
        return self.stream(events, admitted.budget)


# drf-spectacular documents DRF views only, and DRF runs no async view: this function carries the
# async view's schema, from the serializers its admission validates with (chat.doors.schema).
@extend_schema(
    operation_id="chat_converse",
    request=ConverseRequestSerializer,
    responses={(200, "application/json"): ConverseResponseSerializer, (200, "text/event-stream"): OpenApiTypes.STR},
    description=(
        "Send a message to an agent. With `Accept: text/event-stream` the answer streams as Server-Sent Events "
        "`session`, `delta`, `trace` (traces feature), `done` (these response fields), `title` (new sessions), `error`; "
        "the WebSocket `/ws/chat/converse` takes the same body and sends the same events as JSON frames."
    ),
)
@api_view(["POST"])
def converse_openapi(request: Any) -> HttpResponse:  # pragma: no cover - documentation only
    raise AssertionError
