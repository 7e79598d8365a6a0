"""`POST /api/chat/converse` (docs/api.md, "Converse"): a JSON answer, or with `Accept:
text/event-stream` the turn's events as Server-Sent Events. Both credentials: a bearer token, or
the `session` cookie with its CSRF token. Everything the turn decides is `chat.turn`'s: this view
only reads the request, admits it (as the WebSocket does) and writes the events.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import api_view

from chat import turn
from chat.doors.http import DoorView, caller_of, wants_events
from chat.turn.serializers import ConverseRequestSerializer, ConverseResponseSerializer, RegenerateRequestSerializer
from chatplatform.api.errors import ApiError


class ConverseView(DoorView):
    async def post(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        try:
            admitted = await turn.admit(caller_of(request), self.body(request), request.content_type or "")
        except turn.Refused as refused:
            return self.refuse(refused.error, refused.budget)
        except ApiError as exc:
            return self.refuse(exc)
        return await self.run(request, admitted)

    async def run(self, request: HttpRequest, admitted: turn.Admitted) -> HttpResponse | StreamingHttpResponse:
        """The admitted turn, answered as JSON or streamed as Server-Sent Events."""
        events = turn.start(admitted).reader()
        if not wants_events(request):
            try:
                return self.answer(await turn.collect(events), admitted.budget)
            except Exception as exc:
                return self.refuse(exc, admitted.budget)
        return self.stream(events, admitted.budget)


class RegenerateView(ConverseView):
    """`POST /api/chat/sessions/{sessionId}/messages/{messageId}/regenerate`: the answer's question
    answered again as a new sibling of it, a turn answered exactly as converse's (docs/api.md,
    "Regenerating an answer")."""

    async def post(self, request: HttpRequest, sessionId: str, messageId: str) -> HttpResponse | StreamingHttpResponse:  # type: ignore[override]
        try:
            body, content_type = self.body(request), request.content_type or "application/json"
            admitted = await turn.admit_regenerate(caller_of(request), sessionId, messageId, body, content_type)
        except turn.Refused as refused:
            return self.refuse(refused.error, refused.budget)
        except ApiError as exc:
            return self.refuse(exc)
        return await self.run(request, admitted)


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


@extend_schema(
    operation_id="chat_message_regenerate",
    parameters=[
        OpenApiParameter("sessionId", str, OpenApiParameter.PATH, description="the session"),
        OpenApiParameter("messageId", str, OpenApiParameter.PATH, description="an assistant message of the session"),
    ],
    request=RegenerateRequestSerializer,
    responses={(200, "application/json"): ConverseResponseSerializer, (200, "text/event-stream"): OpenApiTypes.STR},
    description=(
        "Answer the question of an assistant message again, as a new sibling of that answer: a turn like converse's "
        "(same admission, events, `done`, usage and webhooks), streamed with `Accept: text/event-stream`. "
        "Another user's session or message: 404."
    ),
)
@api_view(["POST"])
def regenerate_openapi(request: Any, sessionId: str, messageId: str) -> HttpResponse:  # pragma: no cover - documentation only
    raise AssertionError
