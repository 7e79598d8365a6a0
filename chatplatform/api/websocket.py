"""WebSocket origin check: a browser's socket must come from the site itself (docs/api.md, "Authentication")."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

# docs/api.md, "WebSocket close codes".
CLOSE_FORBIDDEN_ORIGIN = 4403


class _OriginRefused(AsyncWebsocketConsumer):
    """Accepted, then closed with a code and a reason: a socket refused before it is accepted
    reaches the client as an HTTP 403 without either."""

    channel_layer_alias = None  # it takes no channel on the layer

    async def connect(self) -> None:
        await self.accept()
        await self.close(
            code=CLOSE_FORBIDDEN_ORIGIN,
            reason="origin not allowed: not this site's scheme, host and port, nor in CSRF_TRUSTED_ORIGINS",
        )


class _SocketRequest(HttpRequest):
    """The opening handshake as Django's CSRF check reads a request: its headers, and `wss` as https."""

    def __init__(self, scope: dict[str, Any]) -> None:
        super().__init__()
        server = scope.get("server") or ("unknown", "0")  # as Django's ASGIRequest, for a handshake without Host
        self.META["SERVER_NAME"], self.META["SERVER_PORT"] = str(server[0]), str(server[1])
        for name, value in scope.get("headers", []):
            self.META["HTTP_" + name.decode("latin1").upper().replace("-", "_")] = value.decode("latin1")
        self._secure_scheme = scope.get("scheme") == "wss"

    def _get_scheme(self) -> str:
        return "https" if self._secure_scheme else "http"


def origin_allowed(scope: dict[str, Any]) -> bool:
    """No Origin (a program, which must then bring a token: chat.doors.websocket), or Django's CSRF
    rule for an Origin: the socket's own scheme, host and port (the host in ALLOWED_HOSTS), or one of
    CSRF_TRUSTED_ORIGINS. The same rule as a cookie's unsafe request, so a page on another port of
    the same host is refused too."""
    request = _SocketRequest(scope)
    if "HTTP_ORIGIN" not in request.META:
        return True
    return CsrfViewMiddleware(lambda _: None)._origin_verified(request)  # type: ignore[arg-type, attr-defined]  # Django's private check


class BrowserOriginValidator:
    """Browsers always send Origin: it must be this site (no cross-site socket hijacking with the cookie)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if origin_allowed(scope):
            return await self.application(scope, receive, send)
        return await _OriginRefused()(scope, receive, send)


def OriginCheckedWebSocket(inner: Any) -> Any:  # noqa: N802 - named like Channels' wrappers
    return BrowserOriginValidator(inner)
