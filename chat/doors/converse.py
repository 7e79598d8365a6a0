"""`POST /api/chat/converse` (docs/api.md, "Converse"): a JSON answer, or with `Accept:
text/event-stream` the turn's events as Server-Sent Events. Both credentials: a bearer token, or
the `session` cookie with its CSRF token.

An async Django view like every other endpoint's: Django checks the host, redirects to HTTPS,
adds the security headers and bounds the body. Everything the turn decides is `chat.turn`'s: this
view only reads the request, admits it (as the WebSocket does) and writes the events.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions
from rest_framework.decorators import api_view

from chat import turn
from chat.turn.serializers import ConverseRequestSerializer, ConverseResponseSerializer
from chat.users.authentication import bearer_token
from chatplatform.api import bodies
from chatplatform.api.exceptions import handle
from chatplatform.api.ratelimit import Budget
from chatplatform.api.views import client_address


def _caller(request: HttpRequest) -> turn.Caller:
    """Who sends the request: a bearer token wins over the cookie, as for every API view."""
    address = client_address(request)
    token = bearer_token(request.headers.get("Authorization", ""))
    if token is not None:
        return turn.BearerCaller(token, address)
    if request.COOKIES:
        return turn.CookieCaller(request, address)
    return turn.Caller(address)


def _headed(response: HttpResponse | StreamingHttpResponse, budget: Budget | None) -> Any:
    """`Allow` and the rate-limit headers, as every API answer carries them."""
    response["Allow"] = "POST, OPTIONS"
    for name, value in (budget.headers() if budget is not None else {}).items():
        response[name] = value
    return response


def _json(status: int, data: Any, budget: Budget | None) -> HttpResponse:
    return _headed(HttpResponse(orjson.dumps(data), status=status, content_type="application/json"), budget)


def _refusal(error: Exception, budget: Budget | None = None) -> HttpResponse:
    """The error in the envelope, with its status and the headers its handler gives (WWW-Authenticate, Retry-After)."""
    refused = handle(error)
    response = _json(refused.status_code, refused.data, budget)
    for name, value in refused.items():
        if name.lower() != "content-type":
            response[name] = value
    return response


@method_decorator(csrf_exempt, name="dispatch")  # a cookie's CSRF token is checked by the admission (user_for_cookie)
class ConverseView(View):
    async def options(self, request: HttpRequest) -> HttpResponse:
        return _json(200, {"success": True}, None)

    async def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return _refusal(exceptions.MethodNotAllowed(request.method or ""))

    async def post(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        try:
            body = request.body
        except RequestDataTooBig:
            return _refusal(bodies.too_large())
        try:
            admitted = await turn.admit(_caller(request), body, request.content_type or "")
        except turn.Refused as refused:
            return _refusal(refused.error, refused.budget)
        events = turn.start(admitted)
        if "text/event-stream" not in request.headers.get("Accept", ""):
            try:
                return _json(200, await turn.collect(events), admitted.budget)
            except Exception as exc:
                return _refusal(exc, admitted.budget)
        # Leaving the stream early (the client went away) only stops the writing: the turn runs on.
        response = StreamingHttpResponse(turn.sse_chunks(events), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"  # nginx passes the events through as they come
        return _headed(response, admitted.budget)


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
def converse_openapi(request: Any) -> None:  # pragma: no cover - documentation only
    raise AssertionError
