"""`POST /api/chat/converse` for bearer-token clients, served straight from ASGI (CONTRACT §7).

Why in front of Django: a streamed turn is the one request whose cost the platform pays per token,
and Django's ASGI handler adds to every request a thread of its own (for the sync receivers of
request_started/finished), the middleware chain, and a `StreamingHttpResponse` that passes each
chunk through several wrappers. Measured with bench/converse.py, that was the difference between
SSE and the WebSocket: about 1.5 ms of CPU per turn and twice the time to first token at 200
streams. Here a turn's whole start (authentication, body, the turn's checks, reads and session
ticket) is one trip to the database thread, its rate limit is counted on the loop when the
bearer token is known already, and each batch of events is one `send`.

What it shares with the Django path, so that both answer alike: the admission and rendering of
`chat.views.Admission` (DRF's authentication, rate limit, permissions, JSON parsing, error
envelope, `Allow` and rate-limit headers), the turn (`chat.converse`), the SSE encoding, and the
response headers of Django's own middleware (security headers, X-Frame-Options, Content-Length).

What it leaves to Django: everything but a POST to exactly this path with `Authorization:
Bearer …`. Cookie sessions (session middleware, CSRF) go through Django, as does a request whose
Host is not allowed or that SECURE_SSL_REDIRECT would redirect. Django's request signals do not
fire for the requests served here; the turn's database threads keep their connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from rest_framework.renderers import JSONRenderer

from chat import converse
from chat.views import admit_and_prepare
from chatplatform.api import ratelimit
from chatplatform.api.authentication import verified_subject
from chatplatform.api.errors import InvalidRequest
from chatplatform.api.exceptions import handle
from chatplatform.db import on_db_thread

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PATH = "/api/chat/converse"
# Django's own response middleware whose headers every answer carries (settings.MIDDLEWARE holds
# subclasses of these; see chatplatform/middleware.py). Only their process_response applies here.
RESPONSE_MIDDLEWARE = (SecurityMiddleware, CommonMiddleware, XFrameOptionsMiddleware)


class ConverseEndpoint:
    """ASGI app: serves bearer-token `POST /api/chat/converse` itself and hands every other request to `inner`."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _is_bearer_converse(scope):
            return await self.inner(scope, receive, send)
        try:
            body = await _read_body(receive)
        except _TooLarge as exc:
            refused = _envelope(InvalidRequest(str(exc), field="body"))
            return await _send(_with_middleware_headers(ASGIRequest(scope, io.BytesIO()), refused), send)
        if body is None:  # the client left before its request was complete
            return None
        request = ASGIRequest(scope, io.BytesIO(body))
        if not _served_here(request):
            return await self.inner(scope, _replaying(body, receive), send)
        subject = verified_subject(request.headers.get("Authorization", ""))
        if subject is not None:
            # The Chat API budget of the token's user (CONTRACT §10), counted on the loop: the
            # database thread then waits on one round trip (the turn's ticket), not two. Should the
            # cache fail, the admission counts (and answers the failure in the envelope) as usual.
            with contextlib.suppress(Exception):
                request.rate_limit = await ratelimit.ahit("chat", f"user:{subject}")  # type: ignore[attr-defined]
        admission, started, failure = await on_db_thread(admit_and_prepare)(request)
        if failure is not None:
            return await _send(_with_middleware_headers(request, failure), send)
        assert started is not None
        turn = converse.start(started)
        if "text/event-stream" not in request.headers.get("Accept", ""):
            try:
                response = admission.answer(await converse.collect(turn))
            except Exception as exc:
                response = admission.error(exc)
            return await _send(_with_middleware_headers(request, response), send)
        head = _with_middleware_headers(request, admission.stream(()))
        await send({"type": "http.response.start", "status": head.status_code, "headers": _headers(head)})
        await _stream(turn, receive, send)
        return None


async def _stream(turn: converse.Turn, receive: Receive, send: Send) -> None:
    """Write the turn's events as they come, a batch per write; stop writing when the client leaves."""

    async def watch_for_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        turn.close()  # the writing stops; the turn goes on and stores its answer

    watcher = asyncio.create_task(watch_for_disconnect(), name="converse-disconnect-watch")
    try:
        async for chunk in converse.sse_chunks(turn):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        watcher.cancel()


def _is_bearer_converse(scope: Scope) -> bool:
    if scope["type"] != "http" or scope["method"] != "POST":
        return False
    path, root = scope["path"], scope.get("root_path", "")
    if (path[len(root) :] if root and path.startswith(root) else path) != PATH:
        return False
    for name, value in scope["headers"]:
        if name == b"authorization":
            return value[:7].lower() == b"bearer "
    return False


def _served_here(request: HttpRequest) -> bool:
    """False when Django would answer before any view: a Host not in ALLOWED_HOSTS (400), or an HTTPS redirect."""
    try:
        request.get_host()
    except DisallowedHost:
        return False
    return not (settings.SECURE_SSL_REDIRECT and not request.is_secure())


class _TooLarge(Exception):
    pass


async def _read_body(receive: Receive) -> bytes | None:
    """The request body; None when the client disconnected first. Bounded by DATA_UPLOAD_MAX_MEMORY_SIZE."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            raise _TooLarge(f"must be at most {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` for an app that reads the request again: the body already read, then the client's own messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _with_middleware_headers(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    for middleware in RESPONSE_MIDDLEWARE:
        response = middleware(_unused_get_response).process_response(request, response)
    return response


def _unused_get_response(request: HttpRequest) -> HttpResponseBase:
    raise AssertionError("only process_response is used")


def _envelope(exc: Exception) -> HttpResponseBase:
    """An error envelope for a request refused before its admission (no DRF view to render it)."""
    response = handle(exc)
    response.accepted_renderer, response.accepted_media_type, response.renderer_context = JSONRenderer(), "application/json", {}
    return response.render()


def _headers(response: HttpResponseBase) -> list[tuple[bytes, bytes]]:
    """As Django's ASGI handler encodes them."""
    headers = [(name.encode("ascii"), value.encode("latin1")) for name, value in response.items()]
    headers += [(b"Set-Cookie", cookie.output(header="").encode("ascii").strip()) for cookie in response.cookies.values()]
    return headers


async def _send(response: HttpResponseBase, send: Send) -> None:
    await send({"type": "http.response.start", "status": response.status_code, "headers": _headers(response)})
    await send({"type": "http.response.body", "body": response.content, "more_body": False})
