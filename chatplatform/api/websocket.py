"""WebSocket origin check: a browser's socket must come from an allowed host (CONTRACT §7)."""

from __future__ import annotations

from typing import Any

from channels.security.websocket import OriginValidator
from django.conf import settings


class BrowserOriginValidator(OriginValidator):
    """Browsers always send Origin: it must be an allowed host (no cross-site socket hijacking with
    the cookie). Programs send none and authenticate with `?token=`, which a foreign page cannot
    forge, so a socket without Origin is let through to authentication."""

    def valid_origin(self, parsed_origin: Any) -> bool:
        return parsed_origin is None or self.validate_origin(parsed_origin)


def OriginCheckedWebSocket(inner: Any) -> Any:  # noqa: N802 - named like Channels' wrappers
    return BrowserOriginValidator(inner, settings.ALLOWED_HOSTS)
