"""Django's Redis cache backend, with one Redis client (and so one connection pool) per process.

Django keeps a cache object per thread, and under ASGI every request to a sync view runs in a
thread of its own; the stock backend would then open a new connection pool per request, and it
builds a new `redis.Redis` on every call (redis-py fills a table of ~170 response callbacks each
time: a quarter of a millisecond). redis-py clients are thread-safe and reset their pool after a
fork, so one per server is shared by every thread.

redis-py is imported when such a cache is first used, as Django's own backend does: not by every
command that sets Django up (docs/decisions.md, "Settings and start-up").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.core.cache.backends import redis as django_redis

if TYPE_CHECKING:
    import redis
    import redis.asyncio

_clients: dict[tuple[str, str], redis.Redis] = {}
_lock = threading.Lock()
ASYNC_MAX_CONNECTIONS = 50


class _SharedClient(django_redis.RedisCacheClient):
    # Django's own attributes, which the stubs leave out.
    _servers: list[str]
    _pool_options: dict[str, Any]
    _pool_class: type[redis.ConnectionPool]
    _client: type[redis.Redis]
    _get_connection_pool_index: Callable[[bool], int]

    def get_client(self, key: Any = None, *, write: bool = False) -> redis.Redis:
        server = self._servers[self._get_connection_pool_index(write)]
        identity = (server, repr(sorted(self._pool_options.items())))
        client = _clients.get(identity)
        if client is None:
            with _lock:
                client = _clients.get(identity)
                if client is None:
                    pool = self._pool_class.from_url(server, **self._pool_options)
                    client = _clients[identity] = self._client(connection_pool=pool)
        return client


class RedisCache(django_redis.RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _SharedClient

    def async_write_client(self, max_connections: int = ASYNC_MAX_CONNECTIONS, blocking_seconds: float = 0) -> redis.asyncio.Redis:
        """A new redis.asyncio client of the server this cache writes to. Its connections belong to
        the event loop that opens them: keep one per loop (`ratelimit` does, with its counter).
        `blocking_seconds`: how long a command may block (XREAD BLOCK) on top of a round trip."""
        import redis.asyncio

        cache = self._cache
        assert isinstance(cache, _SharedClient)  # self._class
        server = cache._servers[cache._get_connection_pool_index(True)]
        # Django's pool options name its sync parser class; redis.asyncio picks its own. Past its
        # bound a blocking pool waits for a free connection (redis.asyncio's default one raises).
        options = {name: value for name, value in cache._pool_options.items() if name != "parser_class"}
        options.setdefault("max_connections", max_connections)
        # Waiting for a free connection is bounded like a round trip: a frozen Redis holds them all.
        wait = options.get("socket_timeout") or 10
        if blocking_seconds and options.get("socket_timeout"):
            options["socket_timeout"] += blocking_seconds
        pool = redis.asyncio.BlockingConnectionPool.from_url(server, timeout=wait, **options)
        return redis.asyncio.Redis(connection_pool=pool)
