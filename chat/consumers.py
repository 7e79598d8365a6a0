"""WebSocket consumers (Channels). `/ws/chat/converse` will carry streamed turns."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from chatplatform.api.errors import Code

# Close code for a socket opened without valid credentials (4000-4999 are the application's).
CLOSE_UNAUTHENTICATED = 4401


class ConverseConsumer(AsyncJsonWebsocketConsumer):
    """Authenticated socket; answers every message with an error event until converse exists."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await self.accept()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        await self.send_json(
            {"type": "error", "success": False, "error": "converse over WebSocket is not available yet", "code": Code.INVALID_REQUEST}
        )
