"""The turns of one process's event loop, for the readers that follow them (chat.turn.replay):
each turn running here with its stop, every turn kept for CHAT_STREAM_REPLAY_SECONDS after it ends,
the session's latest turn, and the frontend tools' results its running turn waits for. Without
Redis (the embedded default: one process) this is the whole store; with it, chat.turn.redis_store
extends it to other processes."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from django.conf import settings

from chat.turn.events import Turn, TurnEvent, parse_event_id


class Reader(Protocol):
    """What the transports read a turn through (a TurnReader, of a turn or of its mirror)."""

    @property
    def message_id(self) -> str: ...

    async def batch(self, quiet_after: float | None = None) -> list[TurnEvent] | None: ...

    def close(self) -> None: ...

    def __aiter__(self) -> AsyncIterator[TurnEvent]: ...


class Running:
    """A turn running in this process: its events, and how to stop it."""

    def __init__(self, session_id: uuid.UUID, turn: Turn, stop: Callable[[], None]) -> None:
        self.session_id, self.turn, self.stop = session_id, turn, stop


class Store:
    """The turns of this process's event loop: running, and kept after they end."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.kept: dict[str, Turn] = {}  # messageId → Turn, running or ended (until forgotten)
        self.latest: dict[str, str] = {}  # sessionId → messageId of its latest turn
        self.running: dict[str, Running] = {}  # sessionId → its turn running here
        self.calls: dict[str, asyncio.Future[str]] = {}  # "<sessionId>:<callId>" → a frontend tool's result, awaited here

    # --- the turn's side --------------------------------------------------------------------------

    def new_turn(self, *, first: int = 1) -> Turn:
        return Turn(first=first)

    def started(self, session_id: uuid.UUID, turn: Turn, stop: Callable[[], None]) -> None:
        """The turn has its answer's id (its `session` event is emitted): it can be found and stopped."""
        key = str(session_id)
        self.kept[turn.message_id] = turn
        self.latest[key] = turn.message_id
        self.running[key] = Running(session_id, turn, stop)

    def ended(self, session_id: uuid.UUID, turn: Turn) -> None:
        key = str(session_id)
        running = self.running.get(key)
        if running is not None and running.turn is turn:
            del self.running[key]
        if turn.message_id:
            self.loop.call_later(settings.CHAT_STREAM_REPLAY_SECONDS, self._forget, key, turn)

    def _forget(self, session_key: str, turn: Turn) -> None:
        if self.kept.get(turn.message_id) is turn:
            del self.kept[turn.message_id]
        if self.latest.get(session_key) == turn.message_id and session_key not in self.running:
            del self.latest[session_key]

    def alive(self, message_id: str) -> None:
        """The turn still runs (its lease was renewed)."""

    def forget_sessions(self, session_ids: list[str]) -> None:
        """Drop the kept turns of deleted sessions (their running turns end on their own)."""
        for session_key in session_ids:
            message_id = self.latest.get(session_key)
            if message_id is None or session_key in self.running:
                continue
            del self.latest[session_key]
            self.kept.pop(message_id, None)

    # --- the readers' side ------------------------------------------------------------------------

    async def open(self, session_id: uuid.UUID, last_event_id: str | None) -> Reader | None:
        """A reader of the session's latest turn, after `last_event_id` when it names that turn (from
        its start otherwise); None when the session has no turn running or kept."""
        message_id = self.latest.get(str(session_id))
        turn = self.kept.get(message_id or "")
        if turn is None:
            return None
        return turn.reader(read_after(last_event_id, turn.message_id))

    async def turn_of(self, message_id: str) -> Turn | None:
        """The turn writing the answer `message_id`, running or kept; None when it is not."""
        return self.kept.get(message_id)

    async def stop(self, session_id: uuid.UUID) -> bool:
        """Stop the session's running turn; whether one was running."""
        running = self.running.get(str(session_id))
        if running is None:
            return False
        running.stop()
        return True

    async def client_result(self, session_id: uuid.UUID, call_id: str) -> str:
        """The result a frontend's client sends for the call `call_id` of the session's running turn
        (its tool's `call` waits here; the tool's timeout bounds the wait)."""
        key = f"{session_id}:{call_id}"
        future = self.calls[key] = self.loop.create_future()
        try:
            return await future
        finally:
            self.calls.pop(key, None)

    async def answer_call(self, session_id: uuid.UUID, call_id: str, content: str) -> bool:
        """Hand a frontend tool's result to the turn waiting for it; whether one waits here."""
        future = self.calls.get(f"{session_id}:{call_id}")
        if future is None or future.done():
            return False
        future.set_result(content)
        return True

    async def abandon_calls(self, session_id: uuid.UUID, content: str) -> None:
        """Give every frontend tool's call the session's turn waits for `content` as its result."""
        for key, future in list(self.calls.items()):
            if key.startswith(f"{session_id}:") and not future.done():
                future.set_result(content)

    async def close(self) -> None:
        pass


def read_after(last_event_id: str | None, message_id: str) -> int:
    parsed = parse_event_id(last_event_id)
    return parsed[1] if parsed is not None and parsed[0] == message_id else 0
