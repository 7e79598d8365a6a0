"""Who sends a request (docs/api.md, "Authentication"): a bearer token's subject, or the user of the `session` cookie.

A verified token's claims name a ChatUser, created on first sight and refreshed from the claims
(`ChatUserManager.sync_from_claims`). The DRF classes serve every API view; the converse
transports (`chat.turn.admission`) and the WebSocket (`WebSocketAuthMiddleware`) use the same
functions, so a credential means the same user whichever way it comes in.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any
from urllib.parse import parse_qs

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.conf import settings
from django.contrib.auth import get_user
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.authentication import CSRFCheck
from rest_framework.request import Request

from chat.users.models import ChatUser
from chatplatform.api.authentication import TOKEN_EXPIRED, decode_token
from chatplatform.db import on_db_thread

# Why a credential that worked no longer does (docs/api.md, "Authentication" and "WebSocket close codes").
DEACTIVATED = "user is deactivated: an operator switched this account off"
SOCKET_TOKEN_EXPIRED = "token expired: get a new token and reconnect"
SOCKET_SIGNED_OUT = "signed out: the session this socket was opened with has ended; sign in again"


def user_for_token(token: str) -> ChatUser:
    """The active user a bearer token names; AuthenticationFailed otherwise. Reads the database (or its cache)."""
    token = token.strip()
    if not token:
        raise exceptions.AuthenticationFailed("bearer token is empty")
    claims = decode_token(token)
    if not isinstance(claims.get("sub"), str) or not claims["sub"].strip():
        raise exceptions.AuthenticationFailed("token subject (sub) must be a non-empty string")
    user = ChatUser.objects.sync_from_claims(claims)
    if not user.is_active:
        raise exceptions.AuthenticationFailed(DEACTIVATED)
    return user


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer …` header; None for any other scheme."""
    scheme, _, token = authorization.partition(" ")
    return token if scheme.lower() == "bearer" else None


def user_for_cookie(request: HttpRequest) -> ChatUser | None:
    """The active user of the request's `session` cookie, None without one; an unsafe method must
    pass Django's CSRF check (PermissionDenied otherwise), as DRF's SessionAuthentication requires
    of every cookie request under /api/. `request` is a plain Django request outside any middleware."""
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(request.COOKIES.get(settings.SESSION_COOKIE_NAME))
    user = get_user(request)
    if not user.is_authenticated or not user.is_active:
        return None
    # DRF's check (CSRFCheck, as SessionAuthentication.enforce_csrf runs it) on the Django request,
    # whose POST parses form bodies only: the JSON body is parsed once, by the turn's admission.
    check = CSRFCheck(lambda _: None)  # type: ignore[arg-type]
    check.process_request(request)
    reason = check.process_view(request, None, (), {})  # type: ignore[arg-type]  # no view: the check reads the request only
    if reason:
        raise exceptions.PermissionDenied(f"CSRF Failed: {reason}")
    return user


def signed_in(request: HttpRequest | Request) -> ChatUser:
    """The request's user, in a view that serves signed-in users only (login_required, IsAuthenticated)."""
    assert request.user.is_authenticated
    return request.user


class BearerJWTAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <JWT>`; the user is created on first sight and refreshed from the claims."""

    def authenticate(self, request: Request) -> tuple[Any, None] | None:
        token = bearer_token(request.META.get("HTTP_AUTHORIZATION", ""))
        return None if token is None else (user_for_token(token), None)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class SessionCookieAuthentication(authentication.SessionAuthentication):
    """The Django session cookie named `session`; DRF enforces CSRF on unsafe methods."""


class BearerJWTScheme(OpenApiAuthenticationExtension):
    target_class = BearerJWTAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}


class SessionCookieScheme(OpenApiAuthenticationExtension):
    target_class = SessionCookieAuthentication
    name = "cookieAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME}


# --- The WebSocket: `?token=<JWT>` or the cookie, checked when the socket opens and at each turn -----


def socket_user(user: ChatUser, *, token: str | None, session_key: str | None) -> ChatUser:
    """The user of a socket's turn: the credential it opened with checked again, so that a token
    past its `exp`, a session signed out or expired, and a deactivated user end the socket at its
    next message (docs/api.md, "WebSocket close codes"). Reads the database (or its cache)."""
    if token is not None:
        try:
            return user_for_token(token)
        except exceptions.AuthenticationFailed as exc:
            raise exceptions.AuthenticationFailed(SOCKET_TOKEN_EXPIRED if exc.detail == TOKEN_EXPIRED else exc.detail) from None
    request = HttpRequest()
    request.session = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    # Django's own reading of a session: its expiry, its user's password hash, the backend's is_active rule.
    current = get_user(request)
    if current.is_authenticated and current.pk == user.pk and current.is_active:
        return current
    if not ChatUser.objects.filter(pk=user.pk, is_active=True).exists():
        raise exceptions.AuthenticationFailed(DEACTIVATED)
    raise exceptions.AuthenticationFailed(SOCKET_SIGNED_OUT)


@on_db_thread  # not Django's one thread-sensitive thread: a socket per turn would queue on it
def _user_from_token(token: str) -> tuple[Any, str | None]:
    """The token's user, or an anonymous one and why: "expired", or the verification's message."""
    try:
        return user_for_token(token), None
    except exceptions.AuthenticationFailed as exc:
        return AnonymousUser(), "expired" if exc.detail == TOKEN_EXPIRED else str(exc.detail)


class _TokenOrSessionAuthMiddleware(AuthMiddleware):
    """`scope["auth_failure"]` says why a token was refused, for the consumer's close reason (docs/api.md);
    `scope["auth_token"]` or `scope["auth_session_key"]` names the credential, checked again at each turn."""

    async def resolve_scope(self, scope: dict[str, Any]) -> None:
        token = parse_qs(scope.get("query_string", b"").decode()).get("token", [None])[0]
        if token:
            scope["user"]._wrapped, scope["auth_failure"] = await _user_from_token(token)
            scope["auth_token"] = token
        else:
            await super().resolve_scope(scope)
            scope["auth_session_key"] = scope["session"].session_key


def WebSocketAuthMiddleware(inner: Any) -> Any:  # noqa: N802 - named like Channels' AuthMiddlewareStack
    return CookieMiddleware(SessionMiddleware(_TokenOrSessionAuthMiddleware(inner)))
