"""What the doors served over HTTP share (docs/api.md): the caller of a request, answers in the
envelope with `Allow` and the rate-limit headers every API answer carries, and a turn's events as
Server-Sent Events.

`DoorView` is an async Django view served by the fast path (chatplatform.fastpath): Django's own
host check, HTTPS redirect, security headers and body limit apply, without the rest of its request
handling. It reads no session or user from the request: a cookie and its CSRF token are checked by
the admission (chat.users.authentication.user_for_cookie), so the view itself is CSRF-exempt.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions

from chat import turn
from chat.turn.events import SSE_HEARTBEAT_SECONDS
from chat.users.authentication import bearer_token
from chatplatform.api import bodies
from chatplatform.api.exceptions import handle
from chatplatform.api.ratelimit import Budget
from chatplatform.api.views import client_address
from chatplatform.fastpath import served_fast


def caller_of(request: HttpRequest) -> turn.Caller:
    """Who sends the request: a bearer token wins over the cookie, as for every API view."""
    address = client_address(request)
    token = bearer_token(request.headers.get("Authorization", ""))
    if token is not None:
        return turn.BearerCaller(token, address)
    if request.COOKIES:
        return turn.CookieCaller(request, address)
    return turn.Caller(address)


def lazy_door(dotted: str) -> Callable[..., Any]:
    """The door view `module.Class`, imported at its first request (or by `load()`): its protocol's
    SDK takes a while to import, and commands that read the URLconf need none of it
    (docs/decisions.md, "Settings and start-up"). Exempt from CSRF and served fast, as DoorView is."""
    module, _, name = dotted.rpartition(".")

    @functools.cache
    def load() -> Callable[..., Any]:
        return getattr(importlib.import_module(module), name).as_view()

    @served_fast
    @csrf_exempt
    async def door(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return await load()(request, *args, **kwargs)

    door.load = load  # type: ignore[attr-defined]
    return door


@method_decorator([csrf_exempt, served_fast], name="dispatch")
class DoorView(View):
    """Base of the doors' async views: their answers, refusals and event streams."""

    def allowed(self) -> str:
        return ", ".join(method.upper() for method in self.http_method_names if hasattr(self, method) and method != "head")

    def headed(self, response: HttpResponse | StreamingHttpResponse, budget: Budget | None) -> Any:
        response["Allow"] = self.allowed()
        for name, value in (budget.headers() if budget is not None else {}).items():
            response[name] = value
        return response

    def answer(self, data: Any, budget: Budget | None, status: int = 200) -> HttpResponse:
        return self.headed(HttpResponse(orjson.dumps(data), status=status, content_type="application/json"), budget)

    def refuse(self, error: Exception, budget: Budget | None = None) -> HttpResponse:
        """The error in the envelope, with its status and the headers its handler gives (WWW-Authenticate, Retry-After)."""
        refused = handle(error)
        response = self.answer(refused.data, budget, refused.status_code)
        for name, value in refused.items():
            if name.lower() != "content-type":
                response[name] = value
        return response

    def stream(self, events: turn.Reader, budget: Budget | None) -> StreamingHttpResponse:
        """The events as Server-Sent Events. Leaving early (the client went away) only stops the
        writing: the turn runs on."""
        return self.headed(sse_response(turn.sse_chunks(events)), budget)

    def body(self, request: HttpRequest) -> bytes:
        """The request's body; 413 past the API's limit (Django bounds it)."""
        try:
            return request.body
        except RequestDataTooBig:
            raise bodies.too_large() from None

    # An async view's handlers are coroutines, which Django awaits; the stubs type View's as sync.
    async def options(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:  # type: ignore[override]
        return self.answer({"success": True}, None)

    async def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:  # type: ignore[override]
        return self.refuse(exceptions.MethodNotAllowed(request.method or ""))


def sse_response(chunks: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx passes the events through as they come
    return response


async def rendered_sse(reader: turn.Reader, render: Callable[[turn.TurnEvent], tuple[bytes, bool]]) -> AsyncIterator[bytes]:
    """A turn's events as a door's Server-Sent Events: `render(event)` gives an event's bytes and
    whether they end the door's stream (a door ends at `done`, not after the title that may follow).
    What is waiting goes in one chunk; a heartbeat comment when quiet. Leaving early only stops the
    writing: the turn runs on."""
    try:
        while (events := await reader.batch(SSE_HEARTBEAT_SECONDS)) is not None:
            if not events:
                yield b": heartbeat\n\n"
                continue
            chunks = []
            for event in events:
                chunk, last = render(event)
                chunks.append(chunk)
                if last:
                    yield b"".join(chunks)
                    return
            yield b"".join(chunks)
    finally:
        reader.close()


def wants_events(request: HttpRequest) -> bool:
    return "text/event-stream" in request.headers.get("Accept", "")
