"""The store of a process's turns with every event also in Redis, for the readers of other
processes (docs/api.md, "Resume, stop and approvals"): a Redis stream per turn, written in batches;
the session's latest turn and a turn's mark of life as keys; stops and frontend tools' results on
the control channel; and the `Follower` that mirrors the turns other processes run, one blocking
read for all of them. The layout is described in chat.turn.replay."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

import orjson
from django.conf import settings

from chat.turn.events import Turn, TurnEvent
from chat.turn.store import Reader, Store, read_after
from chatplatform import inflight

logger = logging.getLogger(__name__)

ALIVE_SECONDS = 45  # a turn renews its mark every 10 s (its lease's period); three missed renewals: it is gone
# A turn's deltas go to Redis in one pipeline per WRITE_SECONDS, not one per delta: each round trip
# cost the server more CPU than the turn's own work (docs/decisions.md, "Durable turns in Redis").
# A reader on another process sees them that much later; the turn's own readers read them at once.
# A turn's start and its end, which other processes act on (resume, stop, delete), go at once.
WRITE_SECONDS = 0.1
FOLLOW_BLOCK_MS = 5000  # the follower's blocking read; after a quiet one it checks the followed turns are alive
CONTROL_CHANNEL = "chat:turns:control"
END = "_end"  # the type of the entry that ends a turn's stream


def stream_key(message_id: str) -> str:
    return f"chat:turn:{message_id}"


def latest_key(session_id: uuid.UUID | str) -> str:
    return f"chat:turns:session:{session_id}"


def alive_key(message_id: str) -> str:
    return f"chat:turns:alive:{message_id}"


class RedisStore(Store):
    """The local store, with every event also in Redis for the readers of other processes."""

    def __init__(self, client: Any, following: Any) -> None:
        super().__init__()
        self.client = client
        self.follower = Follower(client, following)
        self.waiting: list[tuple[str, TurnEvent | None, str, int]] = []  # (messageId, event or the end, sessionId, last n)
        self.writer: asyncio.Task[None] | None = None
        self.urgent = asyncio.Event()  # a turn started or ended: the writer goes now
        self.listener: asyncio.Task[None] | None = None

    def new_turn(self, *, first: int = 1) -> Turn:
        self._listen()
        turn = Turn(first=first)
        session_of: dict[str, str] = {}

        def record(event: TurnEvent | None) -> None:
            if event is not None and event.type == "session":
                session_of["id"] = event.data["sessionId"]
            if turn.message_id:
                self.waiting.append((turn.message_id, event, session_of.get("id", ""), turn.last))
                if event is None or event.type == "session":
                    self.urgent.set()
                if self.writer is None:
                    self.writer = self.loop.create_task(self._write(), name="turn-events-writer")
                    inflight.track_after(self.writer)  # a shutdown's drain lets the turns' last events reach Redis

        turn._on_event = record
        return turn

    async def _write(self) -> None:
        """Append what the turns emitted in the last WRITE_SECONDS (or until one started or ended), in
        one pipeline; at most one under way."""
        try:
            while self.waiting:
                if not self.urgent.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.urgent.wait(), WRITE_SECONDS)
                self.urgent.clear()
                batch, self.waiting = self.waiting, []
                pipe = self.client.pipeline(transaction=False)
                keep, alive = settings.CHAT_STREAM_REPLAY_SECONDS, ALIVE_SECONDS
                for message_id, event, session_id, last in batch:
                    key = stream_key(message_id)
                    if event is None:
                        pipe.xadd(key, {"t": END}, id=f"{last}-1")
                        pipe.expire(key, keep)
                        pipe.delete(alive_key(message_id))
                        if session_id:
                            pipe.expire(latest_key(session_id), keep)
                        continue
                    fields = {"t": event.type, "d": orjson.dumps(event.data), "s": event.status}
                    pipe.xadd(key, fields, id=f"{event.n}-0")
                    if event.type == "session":
                        # Until it ends the turn's keys live at least as long as it may pause for a person.
                        pipe.expire(key, keep + 86400)
                        pipe.set(latest_key(session_id), message_id, ex=keep + 86400)
                        pipe.set(alive_key(message_id), 1, ex=alive)
                try:
                    await pipe.execute(raise_on_error=False)
                except Exception:
                    logger.warning("turn events could not be kept in Redis; resuming from another process will miss them", exc_info=True)
        finally:
            self.writer = None

    def alive(self, message_id: str) -> None:
        async def mark() -> None:
            with contextlib.suppress(Exception):
                await self.client.set(alive_key(message_id), 1, ex=ALIVE_SECONDS)

        self.loop.create_task(mark(), name="turn-alive")

    async def open(self, session_id: uuid.UUID, last_event_id: str | None) -> Reader | None:
        local = await super().open(session_id, last_event_id)
        if local is not None and str(session_id) in self.running:
            return local
        message_id = await self.client.get(latest_key(session_id))
        if message_id is None:
            return local
        message_id = _text(message_id)
        if local is not None and self.latest.get(str(session_id)) == message_id:
            return local
        mirror = await self.follower.mirror(message_id)
        return None if mirror is None else mirror.reader(read_after(last_event_id, message_id))

    async def turn_of(self, message_id: str) -> Turn | None:
        return await super().turn_of(message_id) or await self.follower.mirror(message_id)

    async def stop(self, session_id: uuid.UUID) -> bool:
        if await super().stop(session_id):
            return True
        message_id = await self._running_elsewhere(session_id)
        if message_id is None:
            return False
        await self.client.publish(CONTROL_CHANNEL, orjson.dumps({"stop": str(session_id), "messageId": message_id}))
        return True

    async def answer_call(self, session_id: uuid.UUID, call_id: str, content: str) -> bool:
        if await super().answer_call(session_id, call_id, content):
            return True
        if await self._running_elsewhere(session_id) is None:
            return False
        await self.client.publish(CONTROL_CHANNEL, orjson.dumps({"answer": f"{session_id}:{call_id}", "content": content}))
        return True

    async def _running_elsewhere(self, session_id: uuid.UUID) -> str | None:
        """The answer id of the session's latest turn while its process (another one) marks it alive."""
        message_id = await self.client.get(latest_key(session_id))
        if message_id is None:
            return None
        message_id = _text(message_id)
        return message_id if await self.client.exists(alive_key(message_id)) else None

    async def abandon_calls(self, session_id: uuid.UUID, content: str) -> None:
        await super().abandon_calls(session_id, content)
        await self.client.publish(CONTROL_CHANNEL, orjson.dumps({"abandon": str(session_id), "content": content}))

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
                        if "answer" in order:  # a frontend tool's result, for a turn that may run here
                            waiting = self.calls.get(order["answer"])
                            if waiting is not None and not waiting.done():
                                waiting.set_result(order["content"])
                            continue
                        if "abandon" in order:
                            await Store.abandon_calls(self, uuid.UUID(order["abandon"]), order["content"])
                            continue
                        running = self.running.get(order.get("stop", ""))
                        if running is not None and running.turn.message_id == order.get("messageId"):
                            running.stop()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("the turn control channel failed; listening again in 1 s", exc_info=True)
                await asyncio.sleep(1)

    async def close(self) -> None:
        for task in (self.listener, self.follower.task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task


class Follower:
    """This process's mirrors of turns other processes run: a Turn per followed turn, filled from
    its Redis stream by one blocking read for all of them (`following`: a client whose commands may
    block), so that a thousand readers cost one round trip per batch of events, not a thousand."""

    def __init__(self, client: Any, following: Any) -> None:
        self.client, self.following = client, following
        self.mirrors: dict[str, Turn] = {}  # messageId → its mirror, while the turn runs
        self.positions: dict[str, Any] = {}  # messageId → the id of the last entry read
        self.task: asyncio.Task[None] | None = None
        self.wake_key = f"chat:turns:wake:{uuid.uuid4()}"

    async def mirror(self, message_id: str) -> Turn | None:
        """The mirror of a turn, filled with what it emitted so far; None when nothing of it is kept."""
        mirror = self.mirrors.get(message_id)
        if mirror is not None:
            return mirror
        entries = await self.client.xrange(stream_key(message_id), "-", "+")
        if not entries:
            return None
        mirror = self.mirrors.get(message_id)  # another reader made it meanwhile
        if mirror is not None:
            return mirror
        mirror = Turn(first=_n(entries[0][0]))
        mirror.message_id = message_id
        for position, (entry_id, fields) in enumerate(entries, start=1):
            # The end of a run that paused for approvals and went on is not the turn's end.
            if position == len(entries) or _text(fields.get(b"t", fields.get("t"))) != END:
                _apply(mirror, entry_id, fields)
        if not mirror.ended:
            self.mirrors[message_id], self.positions[message_id] = mirror, entries[-1][0]
            if self.task is None or self.task.done():
                self.task = asyncio.get_running_loop().create_task(self._follow(), name="turn-follower")
            else:
                await self.client.xadd(self.wake_key, {"w": 1}, maxlen=1)  # the blocking read takes the new stream now
        return mirror

    async def _follow(self) -> None:
        """Read every mirrored stream's new entries, blocking until some come; end the mirrors of
        turns that ended, or whose process died (their mark of life gone)."""
        wake = "$"
        while self.mirrors:
            streams = {stream_key(message_id): self.positions[message_id] for message_id in self.mirrors}
            try:
                answer = await self.following.xread({**streams, self.wake_key: wake}, block=FOLLOW_BLOCK_MS, count=1000)
            except Exception:
                logger.warning("following turns of other processes failed; trying again in 1 s", exc_info=True)
                await asyncio.sleep(1)
                continue
            for key, entries in answer or []:
                key = key.decode() if isinstance(key, bytes) else key
                if key == self.wake_key:
                    wake = entries[-1][0]
                    continue
                message_id = key.removeprefix("chat:turn:")
                mirror = self.mirrors.get(message_id)
                if mirror is None:
                    continue
                for entry_id, fields in entries:
                    _apply(mirror, entry_id, fields)
                self.positions[message_id] = entries[-1][0]
            if not answer:
                await self._end_the_dead()
            for message_id in [message_id for message_id, mirror in self.mirrors.items() if mirror.ended]:
                del self.mirrors[message_id], self.positions[message_id]

    async def _end_the_dead(self) -> None:
        """A quiet spell: end the mirrors of turns whose process died without ending them."""
        for message_id, mirror in list(self.mirrors.items()):
            if not await self.client.exists(alive_key(message_id)):
                rest = await self.client.xrange(stream_key(message_id), f"({_text(self.positions[message_id])}", "+")
                for entry_id, fields in rest:
                    _apply(mirror, entry_id, fields)
                mirror.emit(None)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _n(entry_id: Any) -> int:
    return int(_text(entry_id).split("-")[0])


def _apply(mirror: Turn, entry_id: Any, fields: dict[Any, Any]) -> None:
    """An entry of a turn's stream, emitted on its mirror: an event, or the end."""
    decoded = {_text(key): value for key, value in fields.items()}
    kind = _text(decoded["t"])
    if kind == END:
        mirror.emit(None)
        return
    if _n(entry_id) != mirror.last + 1:  # written twice (a retried batch): once is enough
        return
    mirror.emit(TurnEvent(kind, orjson.loads(decoded["d"]), int(decoded.get("s") or 200)))
