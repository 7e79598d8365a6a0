"""Fixed-window rate limits counted in the shared cache (docs/api.md, "Rate limits").

With REDIS_URL set the counter is one atomic INCR (+ EXPIRE on the first hit) in a single round
trip, so every server process shares one budget. With the local-memory cache the counter is
per process, which is all the embedded default has.

`ahit` counts on the event loop (redis.asyncio) for the streaming paths: a round trip made from a
database thread holds that thread, and under load waits again for the GIL when the answer comes.
The hits of one event loop travel together (`_Counter`): those that arrive while a round trip is
under way go in the next one, one INCRBY per key.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache

from chatplatform import redis_cache


@dataclass(frozen=True, slots=True)
class Budget:
    limit: int
    remaining: int
    reset: int  # Unix seconds at which the window ends

    @property
    def exceeded(self) -> bool:
        return self.remaining < 0

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.remaining, 0)),
            "X-RateLimit-Reset": str(self.reset),
        }

    def retry_after(self) -> int:
        return max(1, self.reset - int(now()))


def now() -> float:
    """The limiter's clock (tests pin it so that a window cannot roll over mid-test)."""
    return time.time()


def _count(key: str, window: int) -> int:
    cache = caches["default"]
    if isinstance(cache, RedisCache):
        pipe = cache._cache.get_client(key, write=True).pipeline(transaction=False)
        return int(_counting(pipe, key, window).execute()[0])
    # Local memory: add() creates the window's counter, incr() is atomic under the cache's lock.
    if cache.add(key, 1, timeout=window + 1):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # the counter expired between add() and incr()
        cache.add(key, 1, timeout=window + 1)
        return 1


def _counting(pipe: Any, key: str, window: int, hits: int = 1) -> Any:
    """`pipe` (a redis or redis.asyncio pipeline) with `hits` counted on `key` queued; the count
    is the first of the two results. INCRBY is atomic on its own, and EXPIRE NX only takes on the
    window's first hit, so no MULTI/EXEC is needed around them."""
    pipe.incrby(key, hits)
    pipe.expire(key, window + 1, nx=True)
    return pipe


class _Counter:
    """The hits counted on one event loop, sent to Redis together.

    A burst of turns is hundreds of hits within milliseconds; a round trip each queued them behind
    the connection pool (docs/decisions.md). Here at most one round trip is under way: the hits
    that arrive meanwhile go in the next, as one INCRBY per key, and each hit is given the count
    it would have had alone (the key's counts in arrival order)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.waiting: dict[str, tuple[int, list[asyncio.Future[int]]]] = {}
        self.sender: asyncio.Task[None] | None = None  # the loop keeps only weak references to tasks

    async def count(self, key: str, window: int) -> int:
        counted = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(key, (window, []))[1].append(counted)
        if self.sender is None:
            self.sender = asyncio.get_running_loop().create_task(self._send(), name="rate-limit-counts")
        return await counted

    async def _send(self) -> None:
        try:
            while self.waiting:
                batch, self.waiting = self.waiting, {}
                pipe = self.client.pipeline(transaction=False)
                for key, (window, hits) in batch.items():
                    _counting(pipe, key, window, len(hits))
                try:
                    results = await pipe.execute()
                except Exception as exc:  # each hit of the batch fails with it
                    for _, hits in batch.values():
                        for counted in hits:
                            if not counted.done():
                                counted.set_exception(exc)
                    continue
                for (_, hits), total in zip(batch.values(), results[::2], strict=True):
                    for position, counted in enumerate(hits, start=int(total) - len(hits) + 1):
                        if not counted.done():
                            counted.set_result(position)
        finally:
            self.sender = None


# A counter, and so a redis.asyncio client, per event loop: its connections belong to the loop that opened them.
_counters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Counter] = weakref.WeakKeyDictionary()


def _window(scope: str, identity: str) -> tuple[str, int, int]:
    """The counter's key, the window's length and its start."""
    window = settings.CHAT_RATE_LIMIT_WINDOW_SECONDS
    current = int(now())
    start = current - current % window
    return f"rl:{scope}:{identity}:{start}", window, start


def _budget(scope: str, used: int, reset: int) -> Budget:
    limit = settings.CHAT_RATE_LIMITS[scope]
    return Budget(limit=limit, remaining=limit - used, reset=reset)


def hit(scope: str, identity: str) -> Budget:
    """Count one request of `identity` against `scope` and return what is left of the budget."""
    key, window, start = _window(scope, identity)
    return _budget(scope, _count(key, window), start + window)


async def ahit(scope: str, identity: str) -> Budget:
    """`hit` awaited on the event loop: with Redis, its round trip holds no thread."""
    key, window, start = _window(scope, identity)
    cache = caches["default"]
    if isinstance(cache, redis_cache.RedisCache):
        loop = asyncio.get_running_loop()
        counter = _counters.get(loop)
        if counter is None:
            counter = _counters[loop] = _Counter(cache.async_write_client())
        used = await counter.count(key, window)
    else:
        used = _count(key, window)  # local memory: no I/O (settings put Redis behind redis_cache.RedisCache)
    return _budget(scope, used, start + window)
