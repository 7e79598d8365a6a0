"""`/api/chat/converse` over HTTP (CONTRACT §7): a JSON answer, or with `Accept: text/event-stream`
the turn's events as Server-Sent Events. Both credentials: a bearer token, or the `session` cookie
with its CSRF token.

Served from ASGI, in front of Django (chatplatform.asgi): a streamed turn is the one request
whose cost the platform pays per token, and Django's handler adds to each request a thread for
its request signals, its middleware chain and a response that wraps every chunk again
(docs/decisions.md). Everything the turn decides is `chat.turn`'s: this module reads the
request, admits it through `chat.turn.admit` (as the WebSocket does) and writes the events.
What Django would refuse before any view (a Host outside ALLOWED_HOSTS, an HTTPS redirect) is
left to Django.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http.request import split_domain_port, validate_host
from rest_framework import exceptions

from chat import turn
from chat.users.authentication import bearer_token
from chatplatform.api import bodies
from chatplatform.api.errors import ApiError
from chatplatform.api.exceptions import handle

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

PATH = "/api/chat/converse"
ALLOWED = b"POST, OPTIONS"


class ConverseEndpoint:
    """ASGI app: serves `/api/chat/converse` itself and hands every other request to `inner` (Django)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _path(scope) != PATH or not _host_allowed(scope) or _redirects(scope):
            return await self.inner(scope, receive, send)
        if scope["method"] == "OPTIONS":
            return await _answer(send, 200, {"success": True})
        if scope["method"] != "POST":
            return await _refuse(send, exceptions.MethodNotAllowed(scope["method"]))
        try:
            body = await _read_body(receive)
        except ApiError as exc:  # too large: refused before the rest is read
            return await _refuse(send, exc)
        if body is None:  # the client left before its request was complete
            return None
        headers = _headers_of(scope)
        try:
            admitted = await turn.admit(_caller(scope, headers, body), body, headers.get("content-type", ""))
        except turn.Refused as refused:
            return await _refuse(send, refused.error, refused.budget)
        events = turn.start(admitted)
        if "text/event-stream" in headers.get("accept", ""):
            return await _stream(events, receive, send, _rate_headers(admitted.budget))
        try:
            done = await turn.collect(events)
        except Exception as exc:
            return await _refuse(send, exc, admitted.budget)
        return await _answer(send, 200, done, _rate_headers(admitted.budget))


def _path(scope: Scope) -> str:
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _headers_of(scope: Scope) -> dict[str, str]:
    return {name.decode("latin1"): value.decode("latin1") for name, value in scope["headers"]}


def _host_allowed(scope: Scope) -> bool:
    host = _headers_of(scope).get("host") or (scope.get("server") or ("", 0))[0]
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def _redirects(scope: Scope) -> bool:
    return settings.SECURE_SSL_REDIRECT and scope.get("scheme") != "https"


def _caller(scope: Scope, headers: dict[str, str], body: bytes) -> turn.Caller:
    """Who sends the request: a bearer token wins over the cookie, as for every API view."""
    address = (scope.get("client") or ("unknown", 0))[0]
    token = bearer_token(headers.get("authorization", ""))
    if token is not None:
        return turn.BearerCaller(token, address)
    if "cookie" in headers:
        return turn.CookieCaller(ASGIRequest(scope, io.BytesIO(body)), address)
    return turn.Caller(address)


# --- Reading the request -------------------------------------------------------------------------


async def _read_body(receive: Receive) -> bytes | None:
    """The request body; None when the client disconnected first. Bounded as every API body (413)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        bodies.check_size(size)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


# --- Writing the answer ----------------------------------------------------------------------------


def _security_headers() -> Headers:
    """What Django's security and clickjacking middleware add to every answer, from the same settings."""
    headers = [(b"x-frame-options", settings.X_FRAME_OPTIONS.encode())]
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"x-content-type-options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        policy = settings.SECURE_REFERRER_POLICY
        headers.append((b"referrer-policy", (policy if isinstance(policy, str) else ",".join(policy)).encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append((b"cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode()))
    return headers


def _rate_headers(budget: Any) -> Headers:
    return [] if budget is None else [(name.lower().encode(), value.encode()) for name, value in budget.headers().items()]


async def _answer(send: Send, status: int, data: Any, headers: Headers | None = None) -> None:
    body = orjson.dumps(data)
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"allow", ALLOWED)]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *_security_headers(), *(headers or [])]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _refuse(send: Send, error: Exception, budget: Any = None) -> None:
    """The error in the envelope, with its status and the headers its handler gives (WWW-Authenticate, Retry-After)."""
    response = handle(error)
    given = [(name.lower().encode(), value.encode()) for name, value in response.items() if name.lower() != "content-type"]
    await _answer(send, response.status_code, response.data, _rate_headers(budget) + given)


async def _stream(events: turn.Turn, receive: Receive, send: Send, headers: Headers) -> None:
    """Write the turn's events as they come, a batch per write; stop writing when the client leaves."""
    # X-Accel-Buffering: nginx passes the events through as they come.
    start = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"), (b"x-accel-buffering", b"no"), (b"allow", ALLOWED)]
    await send({"type": "http.response.start", "status": 200, "headers": [*start, *_security_headers(), *headers]})

    async def watch_for_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        events.close()  # the writing stops; the turn goes on and stores its answer

    watcher = asyncio.create_task(watch_for_disconnect(), name="converse-disconnect-watch")
    try:
        async for chunk in turn.sse_chunks(events):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        watcher.cancel()
