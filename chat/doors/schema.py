"""What the OpenAPI schema says of converse."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from chat.turn.serializers import ConverseRequestSerializer, ConverseResponseSerializer
from chatplatform.api.views import ApiView

# --- Converse (SPEC.md "Send message", CONTRACT §7) ------------------------------------------------


class ConverseView(ApiView):
    """What the OpenAPI schema says of `POST /api/chat/converse`. The path is served by
    `chat.endpoint` in front of Django (chatplatform.asgi), never routed here."""

    @extend_schema(
        operation_id="chat_converse",
        request=ConverseRequestSerializer,
        responses={
            (200, "application/json"): ConverseResponseSerializer,
            (200, "text/event-stream"): OpenApiTypes.STR,
        },
        description=(
            "Send a message to an agent. With `Accept: text/event-stream` the answer streams as Server-Sent Events "
            "`session`, `delta`, `trace` (traces feature), `done` (these response fields), `title` (new sessions), `error`; "
            "the WebSocket `/ws/chat/converse` takes the same body and sends the same events as JSON frames."
        ),
    )
    def post(self, request: Request) -> Response:
        raise AssertionError("POST /api/chat/converse is served by chat.endpoint")


def document_converse(endpoints: list[tuple[str, str, str, Any]], **kwargs: Any) -> list[tuple[str, str, str, Any]]:
    """drf-spectacular preprocessing hook: the converse path in the schema (it has no Django route)."""
    return [*endpoints, ("/api/chat/converse", r"^api/chat/converse$", "POST", ConverseView.as_view())]
