"""Cache generations: how a write makes every cached copy stale without finding them.

Entries are kept under a generation (a random token in the shared cache). A write replaces the
generation, and every reader, in every process sharing the cache (all of them with REDIS_URL),
stops using what it kept under the old one: in the writing process at once, elsewhere within a
second (`LOCAL_SECONDS`). The tag cache (tags/cache.py) and the process-local
copies of definitions (`LocalCopies`) both work this way.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from django.core.cache import cache
from django.db import transaction

T = TypeVar("T")

# Each process remembers a generation it read for LOCAL_SECONDS, so a converse turn reads its
# definitions without a cache round trip. A write in this process is seen at once (`_new` updates
# the memory); a write in another process within that second, as for users (chat.models).
LOCAL_SECONDS = 1.0
_local: dict[str, tuple[float, str]] = {}


def current(key: str) -> str:
    """The generation under `key`. A missing one (first use, or evicted) starts a new random one,
    never a reused value, so entries kept under an earlier generation cannot come back to life."""
    now = time.monotonic()
    kept = _local.get(key)
    if kept is not None and kept[0] > now:
        return kept[1]
    value = cache.get(key)
    if value is None:
        cache.add(key, uuid.uuid4().hex, timeout=None)
        value = cache.get(key)
    _local[key] = (now + LOCAL_SECONDS, str(value))
    return str(value)


def forget_local() -> None:
    """Drop this process's memory of generations (tests clear the shared cache behind it)."""
    _local.clear()


def replace(key: str) -> None:
    """Make everything kept under the generation `key` stale.

    Replaced now, so this process's next read (even inside the same transaction) misses; and
    again after commit, because a reader elsewhere may have kept the pre-commit rows under the
    new generation in between.
    """
    _new(key)
    transaction.on_commit(lambda: _new(key))


def _new(key: str) -> None:
    value = uuid.uuid4().hex
    cache.set(key, value, timeout=None)
    _local[key] = (time.monotonic() + LOCAL_SECONDS, value)


class LocalCopies:
    """Objects read from the database, kept in this process while the generation `key` stands
    and for at most `lifetime` seconds. The lifetime bounds staleness where no write replaced the
    generation: a raw UPDATE, or several processes on the local-memory cache (no REDIS_URL).

    The objects are shared by every thread of the process: callers only read them.
    """

    MAX_ENTRIES = 10_000

    def __init__(self, key: str, *, lifetime: float) -> None:
        self.key = key
        self.lifetime = lifetime
        self._entries: dict[Hashable, tuple[str, float, Any]] = {}

    def get(self, name: Hashable, load: Callable[[], T], *, keep: Callable[[T], bool] | None = None) -> T:
        """The kept copy of `name`, or `load()`: kept when it returns and `keep` (if given) says
        so; an exception is not kept."""
        return self._get(name, load, current(self.key), keep)

    def reader(self) -> Callable[[Hashable, Callable[[], Any]], Any]:
        """`get` for several copies read together (a turn's chat app, agent and tools): the
        generation is read once (one cache round trip, not one per copy)."""
        generation = current(self.key)
        return lambda name, load: self._get(name, load, generation)

    def _get(self, name: Hashable, load: Callable[[], T], generation: str, keep: Callable[[T], bool] | None = None) -> T:
        now = time.monotonic()
        entry = self._entries.get(name)
        if entry is not None and entry[0] == generation and entry[1] > now:
            return entry[2]
        value = load()
        if keep is not None and not keep(value):
            return value
        if len(self._entries) >= self.MAX_ENTRIES:
            self._entries.clear()
        self._entries[name] = (generation, now + self.lifetime, value)
        return value

    def invalidate(self, **signal_kwargs: Any) -> None:
        """Every process drops its copies at its next read (usable as a model signal receiver)."""
        replace(self.key)
