"""Where a turn's events are kept, so that any client can follow a turn from any process: resume
after a reload, a second tab, another device (docs/api.md, "Resume, stop and approvals").

In the process that runs a turn, its events are a `Turn` (chat.turn.events): readers there follow
it directly. With REDIS_URL every event is also appended to a Redis stream per turn
(`chat:turn:<messageId>`, entry ids `0-<n>`), written in batches (one round trip for the events
of a moment, not one per token), and kept for CHAT_STREAM_REPLAY_SECONDS after the turn ends; a
reader in another process replays the stream after its event id, then follows it with blocking
reads. `chat:turns:session:<sessionId>` names the session's latest turn; `chat:turns:alive:<id>`
lives while the turn runs (renewed with its lease), so a reader of a turn whose process died
hears so instead of waiting for ever. A stop travels on the channel `chat:turns:control`, which
every process that runs turns listens to.

Without Redis (the embedded default: one process) the kept Turns are the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import orjson
from django.conf import settings
from django.core.cache import caches

from chat.turn.events import Turn, TurnEvent, parse_event_id
from chatplatform import redis_cache

logger = logging.getLogger(__name__)

ALIVE_SECONDS = 45  # a turn renews its mark every 10 s (its lease's period); three missed renewals: it is gone
FOLLOW_BLOCK_MS = 5000  # a remote reader's blocking read; between two it checks the turn is alive
CONTROL_CHANNEL = "chat:turns:control"
FOLLOWERS_MAX = 2000  # readers following turns of other processes at once, per process


def _stream_key(message_id: str) -> str:
    return f"chat:turn:{message_id}"


def _latest_key(session_id: uuid.UUID | str) -> str:
    return f"chat:turns:session:{session_id}"


def _alive_key(message_id: str) -> str:
    return f"chat:turns:alive:{message_id}"


class Reader(Protocol):
    """What the transports read a turn through: a TurnReader, or a RemoteReader of another process's turn."""

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

    # --- the readers' side ------------------------------------------------------------------------

    async def open(self, session_id: uuid.UUID, last_event_id: str | None) -> Reader | None:
        """A reader of the session's latest turn, after `last_event_id` when it names that turn (from
        its start otherwise); None when the session has no turn running or kept."""
        message_id = self.latest.get(str(session_id))
        turn = self.kept.get(message_id or "")
        if turn is None:
            return None
        return turn.reader(_after(last_event_id, turn.message_id))

    async def stop(self, session_id: uuid.UUID) -> bool:
        """Stop the session's running turn; whether one was running."""
        running = self.running.get(str(session_id))
        if running is None:
            return False
        running.stop()
        return True

    async def close(self) -> None:
        pass


def _after(last_event_id: str | None, message_id: str) -> int:
    parsed = parse_event_id(last_event_id)
    return parsed[1] if parsed is not None and parsed[0] == message_id else 0


class RedisStore(Store):
    """The local store, with every event also in Redis for the readers of other processes."""

    def __init__(self, client: Any, followers: Any) -> None:
        super().__init__()
        self.client = client
        self.followers = followers  # blocking reads hold a connection each: a pool of their own
        self.waiting: list[tuple[str, TurnEvent | None, str]] = []  # (messageId, event or the end, sessionId)
        self.writer: asyncio.Task[None] | None = None
        self.listener: asyncio.Task[None] | None = None

    def new_turn(self, *, first: int = 1) -> Turn:
        self._listen()
        turn = Turn(first=first)
        session_of: dict[str, str] = {}

        def record(event: TurnEvent | None) -> None:
            if event is not None and event.type == "session":
                session_of["id"] = event.data["sessionId"]
            if turn.message_id:
                self.waiting.append((turn.message_id, event, session_of.get("id", "")))
                if self.writer is None:
                    self.writer = self.loop.create_task(self._write(), name="turn-events-writer")

        turn._on_event = record
        return turn

    async def _write(self) -> None:
        """Append what the turns emitted since the last round trip, in one pipeline; at most one under way."""
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, []
                pipe = self.client.pipeline(transaction=False)
                keep, alive = settings.CHAT_STREAM_REPLAY_SECONDS, ALIVE_SECONDS
                for message_id, event, session_id in batch:
                    key = _stream_key(message_id)
                    if event is None:
                        pipe.expire(key, keep)
                        pipe.delete(_alive_key(message_id))
                        if session_id:
                            pipe.expire(_latest_key(session_id), keep)
                        continue
                    fields = {"t": event.type, "d": orjson.dumps(event.data), "s": event.status}
                    pipe.xadd(key, fields, id=f"0-{event.n}")
                    if event.type == "session":
                        # Until it ends the turn's keys live at least as long as it may pause for a person.
                        pipe.expire(key, keep + 86400)
                        pipe.set(_latest_key(session_id), message_id, ex=keep + 86400)
                        pipe.set(_alive_key(message_id), 1, ex=alive)
                try:
                    await pipe.execute(raise_on_error=False)
                except Exception:
                    logger.warning("turn events could not be kept in Redis; resuming from another process will miss them", exc_info=True)
        finally:
            self.writer = None

    def alive(self, message_id: str) -> None:
        async def mark() -> None:
            with contextlib.suppress(Exception):
                await self.client.set(_alive_key(message_id), 1, ex=ALIVE_SECONDS)

        self.loop.create_task(mark(), name="turn-alive")

    async def open(self, session_id: uuid.UUID, last_event_id: str | None) -> Reader | None:
        local = await super().open(session_id, last_event_id)
        if local is not None and str(session_id) in self.running:
            return local
        message_id = await self.client.get(_latest_key(session_id))
        if message_id is None:
            return local
        message_id = message_id.decode() if isinstance(message_id, bytes) else str(message_id)
        if local is not None and self.latest.get(str(session_id)) == message_id:
            return local
        if not await self.client.exists(_stream_key(message_id)):
            return None
        return RemoteReader(self.followers, message_id, _after(last_event_id, message_id))

    async def stop(self, session_id: uuid.UUID) -> bool:
        if await super().stop(session_id):
            return True
        message_id = await self.client.get(_latest_key(session_id))
        if message_id is None:
            return False
        message_id = message_id.decode() if isinstance(message_id, bytes) else str(message_id)
        if not await self.client.exists(_alive_key(message_id)):
            return False
        await self.client.publish(CONTROL_CHANNEL, orjson.dumps({"stop": str(session_id), "messageId": message_id}))
        return True

    def _listen(self) -> None:
        if self.listener is None or self.listener.done():
            self.listener = self.loop.create_task(self._control(), name="turn-control")

    async def _control(self) -> None:
        """Stop the turns of this process that another process was asked to stop."""
        while True:
            try:
                async with self.client.pubsub() as pubsub:
                    await pubsub.subscribe(CONTROL_CHANNEL)
                    async for message in pubsub.listen():
                        if message.get("type") != "message":
                            continue
                        order = orjson.loads(message["data"])
                        running = self.running.get(order.get("stop", ""))
                        if running is not None and running.turn.message_id == order.get("messageId"):
                            running.stop()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("the turn control channel failed; listening again in 1 s", exc_info=True)
                await asyncio.sleep(1)

    async def close(self) -> None:
        if self.listener is not None:
            self.listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.listener


class RemoteReader:
    """A turn of another process, read from its Redis stream: what is kept, then what comes."""

    def __init__(self, client: Any, message_id: str, after: int) -> None:
        self.client, self.message_id, self.after = client, message_id, after
        self.closed = False

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
        if self.closed:
            return None
        key = _stream_key(self.message_id)
        block = FOLLOW_BLOCK_MS if quiet_after is None else min(FOLLOW_BLOCK_MS, int(quiet_after * 1000))
        while True:
            events = await self._read(key, block)
            if events:
                return events
            if not await self.client.exists(_alive_key(self.message_id)):
                # The turn has ended (or its process died): what it wrote before its end is there now.
                self.closed = True
                return await self._read(key, None) or None
            if quiet_after is not None:
                return []

    async def _read(self, key: str, block: int | None) -> list[TurnEvent]:
        answer = await self.client.xread({key: f"0-{self.after}"}, block=block, count=1000)
        events = [_event(entry_id, fields) for entry_id, fields in (answer[0][1] if answer else [])]
        if events:
            self.after = events[-1].n
        return events


def _event(entry_id: Any, fields: dict[Any, Any]) -> TurnEvent:
    decoded = {(k.decode() if isinstance(k, bytes) else k): v for k, v in fields.items()}
    n = int((entry_id.decode() if isinstance(entry_id, bytes) else entry_id).split("-")[1])
    kind = decoded["t"].decode() if isinstance(decoded["t"], bytes) else decoded["t"]
    return TurnEvent(kind, orjson.loads(decoded["d"]), int(decoded.get("s") or 200), n)


# One store per event loop: its Turns, and its Redis connections, belong to the loop that made them.
_stores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Store] = weakref.WeakKeyDictionary()


def store() -> Store:
    loop = asyncio.get_running_loop()
    found = _stores.get(loop)
    if found is None:
        cache = caches["default"]
        if isinstance(cache, redis_cache.RedisCache):
            followers = cache.async_write_client(max_connections=FOLLOWERS_MAX, blocking_seconds=FOLLOW_BLOCK_MS / 1000)
            found = RedisStore(cache.async_write_client(), followers)
        else:
            found = Store()
        _stores[loop] = found
    return found


async def resume(session_id: uuid.UUID, last_event_id: str | None) -> Reader | None:
    """A reader of the session's latest turn after `last_event_id`; None when there is none to follow."""
    return await store().open(session_id, last_event_id)


async def stop(session_id: uuid.UUID) -> bool:
    """Stop the session's running turn, in whichever process runs it; whether one was running."""
    return await store().stop(session_id)
