"""A turn's events, handed from the turn's task to the one transport that reads them, and their encodings.

Events: `session`, `delta`…, `trace`… (traces feature), `done`, `title`? or `error` (CONTRACT §7).
The same events are the SSE stream (`sse_chunks`), the WebSocket's frames (`frame`) and, reduced
to the `done` event's fields, the JSON answer (`collect`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson

from chatplatform.api.errors import ApiError, Code
from chatplatform.api.exceptions import handle

SSE_HEARTBEAT_SECONDS = 15.0  # CONTRACT §7


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """One event: `type` and its fields. `status` is the HTTP status an `error` stands for."""

    type: str
    data: dict[str, Any]
    status: int = 200


def error_event(exc: Exception) -> TurnEvent:
    """Any exception as the `error` event: SPEC.md's envelope, rendered by the one exception handler."""
    response = handle(exc)
    return TurnEvent("error", dict(response.data), response.status_code)


class Turn:
    """The events of a started turn, in order: iterate them, or take what is waiting with `batch`.

    `emit` appends and wakes the one reader: no queue and no timer per event, since a streamed
    token costs the platform about as much as the rest of its way to the client.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._events: list[TurnEvent] = []
        self._ended = False  # the turn emitted its end (None)
        self._over = False  # the reader has taken the last event, or left
        self._waiter: asyncio.Future[None] | None = None
        self._last_emit = self._loop.time()
        self._quiet = False  # the reader asked to hear of quiet spells, and one came
        self._quiet_timer: asyncio.TimerHandle | None = None

    def emit(self, event: TurnEvent | None) -> None:
        """Hand on an event; None ends the turn's events."""
        if self._over:  # nobody reads any more
            return
        if event is None:
            self._ended = True
        else:
            self._events.append(event)
        self._last_emit = self._loop.time()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """The reader leaves (its client went away): later events are dropped, a waiting `batch`
        returns None. The turn itself goes on and stores its answer."""
        self._over, self._events = True, []
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        self._wake()

    def __aiter__(self) -> AsyncIterator[TurnEvent]:
        return self._each()

    async def _each(self) -> AsyncIterator[TurnEvent]:
        try:
            while (events := await self.batch()) is not None:
                for event in events:
                    yield event
        finally:
            self.close()

    async def batch(self, quiet_after: float | None = None) -> list[TurnEvent] | None:
        """Every event waiting now, waiting for the first if there is none; None once the turn is over.

        With `quiet_after`: [] whenever the turn has been quiet that long (a stream's heartbeat),
        checked by one timer for the whole turn, not one per wait.
        """
        if quiet_after is not None and self._quiet_timer is None and not (self._ended or self._over):
            self._quiet_timer = self._loop.call_at(self._last_emit + quiet_after, self._quiet_check, quiet_after)
        while not self._events and not self._ended and not self._over:
            if self._quiet:
                self._quiet = False
                return []
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._over:
            return None
        events, self._events, self._quiet = self._events, [], False
        if self._ended:
            self._over = True
            if self._quiet_timer is not None:
                self._quiet_timer.cancel()
        return events or None

    def _quiet_check(self, quiet_after: float) -> None:
        if self._ended or self._over:
            return
        now = self._loop.time()
        if now - self._last_emit >= quiet_after:
            self._quiet, self._last_emit = True, now
            self._wake()
        self._quiet_timer = self._loop.call_at(self._last_emit + quiet_after, self._quiet_check, quiet_after)


# --- Encodings ---------------------------------------------------------------------------------------


def sse_event(event: TurnEvent) -> bytes:
    # orjson: a tenth of json's CPU per delta (UTF-8 out, not \u escapes; the same JSON values).
    return b"event: " + event.type.encode() + b"\ndata: " + orjson.dumps(event.data) + b"\n\n"


async def sse_chunks(turn: Turn) -> AsyncIterator[bytes]:
    """The turn as Server-Sent Events: what is waiting in one chunk, a heartbeat comment when quiet."""
    try:
        while (events := await turn.batch(SSE_HEARTBEAT_SECONDS)) is not None:
            # Quiet for a while (a long tool call): the comment keeps proxies from closing the stream.
            yield b"".join(map(sse_event, events)) if events else b": heartbeat\n\n"
    finally:
        turn.close()  # leaving early (the client went away) only stops the writing: the turn runs on


def frame(event: TurnEvent) -> str:
    """A WebSocket frame: `{"type": <event>, ...fields}`."""
    return orjson.dumps({"type": event.type, **event.data}).decode()


async def collect(turn: Turn) -> dict[str, Any]:
    """The non-streaming answer: the `done` event's fields; an `error` event is raised as the API error."""
    async for event in turn:
        if event.type == "done":
            return event.data  # leaving now: a pending title is still stored
        if event.type == "error":
            raise ApiError(event.data["error"], code=event.data.get("code"), status_code=event.status)
    raise ApiError("the turn ended without an answer", code=Code.INTERNAL_ERROR, status_code=500)
