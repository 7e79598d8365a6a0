"""WebSocket authentication: `?token=<JWT>` or the `session` cookie (CONTRACT §7)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.auth import AuthMiddleware
from channels.security.websocket import OriginValidator
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from rest_framework import exceptions

from chatplatform.api.authentication import decode_token
from chatplatform.db import on_db_thread


@on_db_thread  # not Django's one thread-sensitive thread: a socket per turn would queue on it
def _user_from_token(token: str) -> Any:
    try:
        claims = decode_token(token)
    except exceptions.AuthenticationFailed:
        return AnonymousUser()
    if not isinstance(claims.get("sub"), str) or not claims["sub"].strip():
        return AnonymousUser()
    user = get_user_model().objects.sync_from_claims(claims)
    return user if user.is_active else AnonymousUser()


class _TokenOrSessionAuthMiddleware(AuthMiddleware):
    async def resolve_scope(self, scope: dict[str, Any]) -> None:
        token = parse_qs(scope.get("query_string", b"").decode()).get("token", [None])[0]
        if token:
            scope["user"]._wrapped = await _user_from_token(token)
        else:
            await super().resolve_scope(scope)


def WebSocketAuthMiddleware(inner: Any) -> Any:  # noqa: N802 - named like Channels' AuthMiddlewareStack
    return CookieMiddleware(SessionMiddleware(_TokenOrSessionAuthMiddleware(inner)))


class BrowserOriginValidator(OriginValidator):
    """Browsers always send Origin: it must be an allowed host (no cross-site socket hijacking with
    the cookie). Programs send none and authenticate with `?token=`, which a foreign page cannot
    forge, so a socket without Origin is let through to authentication."""

    def valid_origin(self, parsed_origin: Any) -> bool:
        return parsed_origin is None or self.validate_origin(parsed_origin)


def OriginCheckedWebSocket(inner: Any) -> Any:  # noqa: N802 - named like Channels' wrappers
    from django.conf import settings

    return BrowserOriginValidator(inner, settings.ALLOWED_HOSTS)
