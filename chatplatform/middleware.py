"""Django's standard middleware, run on the event loop when the server is ASGI.

Under ASGI, Django's `MiddlewareMixin` sends each `process_request` and `process_response` through
`sync_to_async`: about a dozen thread hops per request, on a thread created for each request
(docs/decisions.md says what that cost). These hooks only read the request and set headers, so
here they run inline on the loop. The few that can reach the database or parse a form body still hop, exactly when they would:
saving a modified session, storing flash messages, checking the CSRF token of a form POST.
Any database access slipping through would raise SynchronousOnlyOperation, never pass silently.

In sync mode (WSGI, Django's test client) every class behaves as Django's own.
"""

from __future__ import annotations

from inspect import iscoroutinefunction
from typing import Any

from asgiref.sync import async_to_sync, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.deprecation import MiddlewareMixin
from servestatic.middleware import ServeStaticMiddleware


class _OnTheLoop:
    """Mixed into a `MiddlewareMixin` class: its hooks run inline in async mode."""

    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        return False

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.process_request(request) if hasattr(self, "process_request") else None
        # get_response is the MiddlewareMixin's this class is mixed into (a coroutine function in async mode).
        response = response or await self.get_response(request)  # type: ignore[attr-defined]
        if not hasattr(self, "process_response"):
            return response
        if self.response_needs_thread(request, response):
            return await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
        return self.process_response(request, response)


class Security(_OnTheLoop, SecurityMiddleware):
    pass


class Common(_OnTheLoop, CommonMiddleware):
    pass


class XFrameOptions(_OnTheLoop, XFrameOptionsMiddleware):
    pass


class Authentication(_OnTheLoop, AuthenticationMiddleware):
    """Only sets the lazy `request.user`; the user is read where it is first used."""


class Session(_OnTheLoop, SessionMiddleware):
    """Loading is lazy (in whatever thread first reads the session); only a save needs the database."""

    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        session = getattr(request, "session", None)
        return session is not None and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class Messages(_OnTheLoop, MessageMiddleware):
    """Messages that were read or added are stored, possibly in the session (the database)."""

    def response_needs_thread(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is not None and (storage.used or storage.added_new)


class Csrf(_OnTheLoop, CsrfViewMiddleware):
    """The token check of an unsafe, non-exempt request reads `request.POST` (parses the body): a thread."""

    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)
        if self.async_mode:
            # Django hops for a sync process_view; an async one is awaited as it is.
            self.process_view = self._process_view_async  # type: ignore[method-assign, assignment]  # Django awaits it

    async def _process_view_async(self, request: HttpRequest, callback: Any, args: Any, kwargs: Any) -> HttpResponseBase | None:
        if getattr(callback, "csrf_exempt", False) or request.method in ("GET", "HEAD", "OPTIONS", "TRACE"):
            return CsrfViewMiddleware.process_view(self, request, callback, args, kwargs)
        return await sync_to_async(CsrfViewMiddleware.process_view, thread_sensitive=True)(self, request, callback, args, kwargs)


class StaticFiles:
    """ServeStatic's middleware is async only: in sync mode (Django's test client) it would run
    every request through async_to_sync and a new event loop. This one hands everything but the
    static paths straight on in sync mode, and is ServeStatic itself in async mode."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)
            self.servestatic = ServeStaticMiddleware(get_response)
        else:
            self.servestatic = ServeStaticMiddleware(sync_to_async(get_response))

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self.servestatic(request)
        if not request.path_info.startswith(self.servestatic.static_prefix):
            return self.get_response(request)
        return async_to_sync(self.servestatic)(request)


class AdminContentSecurityPolicy(_OnTheLoop, MiddlewareMixin):
    """A Content-Security-Policy on the Django admin's pages: scripts from this origin only (Django's
    admin and the platform's editors have no inline script), no image, frame or connection to
    another origin (a model's Markdown image in an insights report would tell its host who reads
    it), forms posted here only. Inline styles stay allowed: the admin's templates and the JSON
    editor set them. The JSON editor checks syntax in a worker it starts from a blob: URL."""

    POLICY = "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            "font-src 'self' data:",
            "connect-src 'self'",
            "worker-src 'self' blob:",
            "object-src 'none'",
            "base-uri 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ]
    )

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if request.path_info.startswith("/admin/") and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.POLICY
        return response
