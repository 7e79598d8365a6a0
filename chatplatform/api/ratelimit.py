"""Fixed-window rate limits counted in the shared cache (CONTRACT §10).

With REDIS_URL set the counter is one atomic INCR (+ EXPIRE on the first hit) in a single round
trip, so every server process shares one budget. With the local-memory cache the counter is
per process, which is all the embedded default has.

`ahit` counts on the event loop (redis.asyncio) for the streaming paths: a round trip made from a
database thread holds that thread, and under load waits again for the GIL when the answer comes.
"""

from __future__ import annotations

import time
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
        return int(_counting(cache._cache.get_client(key, write=True), key, window).execute()[0])
    # Local memory: add() creates the window's counter, incr() is atomic under the cache's lock.
    if cache.add(key, 1, timeout=window + 1):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # the counter expired between add() and incr()
        cache.add(key, 1, timeout=window + 1)
        return 1


def _counting(client: Any, key: str, window: int) -> Any:
    """A pipeline of `client` (redis or redis.asyncio) that counts one hit on `key`; its first
    result is the count. One round trip: INCR is atomic on its own, and EXPIRE NX only takes on
    the window's first hit, so no MULTI/EXEC is needed around them."""
    pipe = client.pipeline(transaction=False)
    pipe.incr(key)
    pipe.expire(key, window + 1, nx=True)
    return pipe


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
        used = int((await _counting(cache.async_write_client(), key, window).execute())[0])
    else:
        used = _count(key, window)  # local memory: no I/O (settings put Redis behind redis_cache.RedisCache)
    return _budget(scope, used, start + window)
