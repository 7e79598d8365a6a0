"""The fast path: a request for a view marked `served_fast` (the doors, whose streams cost the
platform per token) is answered by that view without Django's request handler, between the same
hooks of Django's own middleware that apply to it (docs/decisions.md, "The converse path's speed").

Django's ASGI handler gives every request a thread of its own, sends the request signals to their
receivers on it, runs the whole middleware chain and closes the response on that thread again, a
good part of a streamed turn's CPU. Here, in front of it:

- the body is read and the request built by the handler's own methods (`read_body`,
  `create_request`), which also bound the body as Django does;
- the site's `SecurityMiddleware` and `CommonMiddleware` look at the request first: when either
  would answer it itself (an HTTPS redirect, a host outside ALLOWED_HOSTS, a refused user agent),
  the request goes through Django after all, which answers it exactly as it would have;
- the view is awaited; what it raises becomes Django's own response for it;
- the site's clickjacking, common and security hooks set their headers on the answer, which the
  handler's `send_response` writes; a client that leaves stops the writing, as in Django's handler.

A view marked `served_fast` must be async, CSRF-exempt, and check its own credentials: no session,
user or messages middleware runs before it. Every other request goes to Django untouched.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import Resolver404, get_resolver, set_script_prefix
from django.utils.module_loading import import_string

# As Django's handler types them.
Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Mapping[str, Any]], Awaitable[None]]

View = TypeVar("View", bound=Callable[..., Any])

# Django's middleware that answers a request before its view or sets headers on every answer: what
# the fast path runs of the site's MIDDLEWARE. The others deal in sessions, users, messages and CSRF,
# which a door reads none of.
HOOKED = (SecurityMiddleware, CommonMiddleware, XFrameOptionsMiddleware)


def served_fast(view: View) -> View:
    """Mark a view for the fast path (see the module's docstring for what it must be)."""
    view.served_fast = True  # type: ignore[attr-defined]
    return view


def _unused(request: HttpRequest) -> HttpResponseBase:
    raise AssertionError("the fast path calls the middleware's hooks only")


class FastPath:
    """ASGI app in front of Django's handler (`django`)."""

    def __init__(self, django: ASGIHandler) -> None:
        self.django = django
        # Those of the site's middleware whose hooks the fast path runs, in their order.
        classes = [import_string(name) for name in settings.MIDDLEWARE]
        middleware = [cls(_unused) for cls in classes if isinstance(cls, type) and issubclass(cls, HOOKED)]
        self.request_hooks = [m.process_request for m in middleware if hasattr(m, "process_request")]
        self.response_hooks = [m.process_response for m in reversed(middleware) if hasattr(m, "process_response")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        view = self.view_for(scope)
        if view is None:
            return await self.django(scope, receive, send)
        try:
            body_file = await self.django.read_body(receive)
        except RequestAborted:
            return None
        with body_file:
            request, _ = self.django.create_request(scope, body_file)  # None: Django answers 400 or 413
            if request is None or self.answered_by_django(request):
                body_file.seek(0)
                return await self.django(scope, _replayed(body_file.read(), receive), send)
            await self.serve(view, request, receive, send)

    def view_for(self, scope: Scope) -> Any:
        """The view and its arguments when the path names a view marked `served_fast`, else None."""
        if scope["type"] != "http":
            return None
        try:
            match = get_resolver().resolve(scope["path"].removeprefix(get_script_prefix(scope)))
        except Resolver404:
            return None
        return match if getattr(match.func, "served_fast", False) else None

    def answered_by_django(self, request: HttpRequest) -> bool:
        """Whether Django's middleware would answer the request before its view (a redirect, a refusal)."""
        try:
            return any(hook(request) is not None for hook in self.request_hooks)
        except Exception:  # DisallowedHost, PermissionDenied: Django turns them into its answer
            return True

    async def serve(self, match: Any, request: HttpRequest, receive: Receive, send: Send) -> None:
        set_script_prefix(get_script_prefix(request.scope))  # type: ignore[attr-defined]  # an ASGIRequest
        serving = asyncio.current_task()
        assert serving is not None
        left = False

        async def watch_for_disconnect() -> None:
            nonlocal left
            try:
                await self.django.listen_for_disconnect(receive)
            except RequestAborted:
                left = True
                serving.cancel()

        watcher = asyncio.create_task(watch_for_disconnect(), name="fast-path-disconnect-watch")
        try:
            response: Any  # what the view answers: Django's hooks are typed for HttpResponse only
            try:
                response = await match.func(request, *match.args, **match.kwargs)
            except Exception as exc:
                response = response_for_exception(request, exc)
            for hook in self.response_hooks:
                response = hook(request, response)
            await self.django.send_response(response, send)
        except asyncio.CancelledError:
            if not left:
                raise
            serving.uncancel()  # the client left: the view and the writing stop, the request ends here
        finally:
            watcher.cancel()


def _replayed(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read handed out first again."""
    replayed = False

    async def again() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again
