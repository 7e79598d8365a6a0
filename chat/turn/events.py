"""A turn's events, numbered and kept, handed from the turn's task to everyone who reads them, and
their encodings (docs/api.md, "Events").

Events: `session`, `delta`…, `trace`… (traces feature), `approval`…, `done`, `title`? or `error`.
Each has a number `n` (1, 2, … within the turn, continued by a turn that resumes after an
approval), and an id `<messageId>:<n>`: the SSE `id:` field, a WebSocket frame's `eventId`, what a
client resumes after. The same events are the SSE stream (`sse_chunks`), the WebSocket's frames
(`frame`) and, reduced to the `done` event's fields, the JSON answer (`collect`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from chatplatform.api.errors import ApiError, Code
from chatplatform.api.exceptions import handle
from chatplatform.api.fields import whole_number

SSE_HEARTBEAT_SECONDS = 15.0  # docs/api.md: a comment every 15 s keeps proxies from closing a quiet stream


@dataclass(slots=True)
class TurnEvent:
    """One event: `type` and its fields; `n` its number in the turn (set when emitted); `status`
    the HTTP status an `error` stands for."""

    type: str
    data: dict[str, Any]
    status: int = 200
    n: int = 0


def error_event(exc: Exception) -> TurnEvent:
    """Any exception as the `error` event: the envelope, rendered by the one exception handler."""
    response = handle(exc)
    return TurnEvent("error", dict(response.data), response.status_code)


def event_id(message_id: str, n: int) -> str:
    return f"{message_id}:{n}"


def parse_event_id(value: str | None) -> tuple[str, int] | None:
    """`<messageId>:<n>` as (messageId, n); None for anything else."""
    message_id, _, n = (value or "").strip().rpartition(":")
    number = whole_number(n)
    return (message_id, number) if message_id and number is not None else None


class Turn:
    """The events of a turn, in order, kept while it runs: any number of readers each get every
    event after the one they start from (`reader(after)`), the first ones as they come.

    `emit` appends and wakes the readers: no queue and no timer per event, since a streamed token
    costs the platform about as much as the rest of its way to the client. `on_event` (the replay
    store, chat.turn.replay) sees every event as it is emitted.
    """

    def __init__(self, *, first: int = 1, on_event: Callable[[TurnEvent | None], None] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self.events: list[TurnEvent] = []
        self.first = first  # the number of the first event kept here
        self.ended = False  # the turn emitted its end (None)
        self.message_id = ""  # the answer's id, known from the `session` event on
        self._changed: asyncio.Future[None] | None = None
        self._on_event = on_event

    @property
    def last(self) -> int:
        """The number of the last event emitted (first - 1 before any)."""
        return self.first + len(self.events) - 1

    def emit(self, event: TurnEvent | None) -> None:
        """Hand on an event; None ends the turn's events."""
        if self.ended:
            return
        if event is None:
            self.ended = True
        else:
            event.n = self.first + len(self.events)
            if event.type == "session":
                self.message_id = event.data["messageId"]
            self.events.append(event)
        if self._on_event is not None:
            self._on_event(event)
        changed = self._changed
        if changed is not None:
            self._changed = None
            if not changed.done():
                changed.set_result(None)

    async def changed(self) -> None:
        """Until the next event (or the end)."""
        if self._changed is None:
            self._changed = self._loop.create_future()
        await asyncio.shield(self._changed)

    def reader(self, after: int = 0) -> TurnReader:
        """A reader of every event numbered above `after`."""
        return TurnReader(self, after)

    def __aiter__(self) -> AsyncIterator[TurnEvent]:
        return self.reader().__aiter__()


class TurnReader:
    """One reader's place in a Turn. Leaving (`close`) only stops this reader: the turn goes on."""

    def __init__(self, turn: Turn, after: int) -> None:
        self.turn = turn
        self.position = max(after - turn.first + 1, 0)  # index of the next event to hand out
        self.closed = False
        self._last_delivery = turn._loop.time()

    @property
    def message_id(self) -> str:
        return self.turn.message_id

    def close(self) -> None:
        self.closed = True

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
        """Every event waiting now, waiting for the first if there is none; None once the turn is
        over (or the reader closed). With `quiet_after`: [] whenever the turn has been quiet that
        long (a stream's heartbeat)."""
        turn = self.turn
        while not self.closed:
            if self.position < len(turn.events):
                events = turn.events[self.position :]
                self.position = len(turn.events)
                self._last_delivery = turn._loop.time()
                return events
            if turn.ended:
                break
            if quiet_after is None:
                await turn.changed()
                continue
            remaining = self._last_delivery + quiet_after - turn._loop.time()
            if remaining <= 0:
                self._last_delivery = turn._loop.time()
                return []
            try:
                async with asyncio.timeout(remaining):
                    await turn.changed()
            except TimeoutError:
                pass
        self.closed = True
        return None


# --- Encodings ---------------------------------------------------------------------------------------


def sse_event(event: TurnEvent, message_id: str) -> bytes:
    # orjson: a tenth of json's CPU per delta (UTF-8 out, not \u escapes; the same JSON values).
    head = b"id: " + f"{message_id}:{event.n}".encode() + b"\nevent: " if message_id else b"event: "
    return head + event.type.encode() + b"\ndata: " + orjson.dumps(event.data) + b"\n\n"


async def sse_chunks(reader: Any) -> AsyncIterator[bytes]:
    """Events of a reader (chat.turn.store.Reader) as Server-Sent Events: what is waiting in one
    chunk, a heartbeat comment when quiet."""
    try:
        while (events := await reader.batch(SSE_HEARTBEAT_SECONDS)) is not None:
            if not events:  # quiet for a while (a long tool call): the comment keeps proxies from closing the stream
                yield b": heartbeat\n\n"
                continue
            message_id = reader.message_id
            yield b"".join([sse_event(event, message_id) for event in events])
    finally:
        reader.close()  # leaving early (the client went away) only stops the writing: the turn runs on


def frame(event: TurnEvent, message_id: str = "") -> str:
    """A WebSocket frame: `{"type": <event>, "eventId": <id>, ...fields}`."""
    if not message_id:
        return orjson.dumps({"type": event.type, **event.data}).decode()
    return orjson.dumps({"type": event.type, "eventId": f"{message_id}:{event.n}", **event.data}).decode()


async def collect(reader: Any) -> dict[str, Any]:
    """The non-streaming answer: the `done` event's fields; an `error` event is raised as the API error."""
    async for event in reader:
        if event.type == "done":
            return event.data  # leaving now: a pending title is still stored
        if event.type == "error":
            raise ApiError(event.data["error"], code=event.data.get("code"), status_code=event.status)
    raise ApiError("the turn ended without an answer", code=Code.INTERNAL_ERROR, status_code=500)
