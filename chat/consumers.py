"""WebSocket consumers (Channels). `/ws/chat/converse` carries streamed turns (CONTRACT §7).

Each message is a converse body; the answer is the turn's events as JSON frames
`{"type": <event>, ...fields}`: the same events, from the same `chat.converse.run_turn`, as the
SSE stream. Several turns may be sent over one socket; they are answered one after another in
the order received (their deltas would otherwise interleave). Closing the socket stops the
frames, not the turn: its answer is still stored.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from chat.converse import TurnEvent, error_event, prepare, start
from chatplatform.api import ratelimit
from chatplatform.api.errors import InvalidRequest, RateLimited
from chatplatform.db import on_db_thread

# Close code for a socket opened without valid credentials (4000-4999 are the application's).
CLOSE_UNAUTHENTICATED = 4401


class ConverseConsumer(AsyncJsonWebsocketConsumer):
    """Authenticated socket (cookie or `?token=`); every message is one turn."""

    # Nothing reaches this socket through the channel layer, so it takes no channel there: with
    # Redis (channels_redis) each socket would otherwise keep a receive loop on Redis running.
    channel_layer_alias = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.user = getattr(user, "_wrapped", user)
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.worker = asyncio.create_task(self._answer_in_order())
        await self.accept()

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Channels' dispatch without its `aclose_old_connections()` before every message: that is a
        hop to Django's one thread-sensitive thread, for consumers that use the database on it (a
        seventh of this consumer's CPU at 50 streams, py-spy). This one never does: its turns read
        and write on their own database threads (`chatplatform.db.on_db_thread`)."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any) -> None:
        try:
            content = json.loads(text_data if text_data is not None else (bytes_data or b""))
        except ValueError:
            content = InvalidRequest("must be a JSON object", field="body")
        self.inbox.put_nowait(content)

    async def disconnect(self, code: int) -> None:
        worker = getattr(self, "worker", None)
        if worker is not None:
            worker.cancel()  # stops the frames; run_turn's task finishes the turn on its own

    async def _send_event(self, event: TurnEvent) -> None:
        await self.send(text_data=orjson.dumps({"type": event.type, **event.data}).decode())

    async def _answer_in_order(self) -> None:
        while True:
            content = await self.inbox.get()
            try:
                if isinstance(content, Exception):
                    raise content
                # Each turn counts against the caller's Chat API budget (CONTRACT §10), on the loop;
                # its checks, reads and session ticket are then one trip to the database thread.
                budget = await ratelimit.ahit("chat", f"user:{self.user.pk}")
                if budget.exceeded:
                    raise RateLimited(budget.retry_after())
                turn = start(await on_db_thread(prepare)(content, self.user))
                try:
                    while (events := await turn.batch()) is not None:
                        for event in events:
                            await self._send_event(event)
                finally:
                    turn.close()  # the socket closed mid-turn: the frames stop, the turn goes on
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await self._send_event(error_event(exc))
