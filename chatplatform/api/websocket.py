"""WebSocket origin check: a browser's socket must come from an allowed host (CONTRACT §7)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.security.websocket import OriginValidator
from django.conf import settings

# docs/api.md, "WebSocket close codes".
CLOSE_FORBIDDEN_ORIGIN = 4403


class _OriginRefused(AsyncWebsocketConsumer):
    """Accepted, then closed with a code and a reason: a socket refused before it is accepted
    reaches the client as an HTTP 403 without either."""

    channel_layer_alias = None  # it takes no channel on the layer

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_FORBIDDEN_ORIGIN, reason="origin not allowed: the page's host is not in ALLOWED_HOSTS")


class BrowserOriginValidator(OriginValidator):
    """Browsers always send Origin: it must be an allowed host (no cross-site socket hijacking with
    the cookie). Programs send none and authenticate with `?token=`, which a foreign page cannot
    forge, so a socket without Origin is let through to authentication."""

    def valid_origin(self, parsed_origin: Any) -> bool:
        return parsed_origin is None or self.validate_origin(parsed_origin)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        origin = next((value for name, value in scope.get("headers", []) if name == b"origin"), None)
        try:
            parsed = urlparse(origin.decode("latin1")) if origin is not None else None
        except UnicodeDecodeError:
            parsed = urlparse("")
        if self.valid_origin(parsed):
            return await self.application(scope, receive, send)
        return await _OriginRefused()(scope, receive, send)


def OriginCheckedWebSocket(inner: Any) -> Any:  # noqa: N802 - named like Channels' wrappers
    return BrowserOriginValidator(inner, settings.ALLOWED_HOSTS)
