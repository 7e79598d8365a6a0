"""The tag cache (docs/api.md, "Limits": lifetime default 5 minutes, bypassed for `dontCacheThis`).

Entries live in the shared Django cache under a generation key. A write does not hunt for the
entries it makes stale: it replaces the generation, and every process (all of them share the
cache when REDIS_URL is set) stops reading the old entries (the writing process at once, the
others within a second: chatplatform.generations); they expire on their own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache

from chatplatform import generations
from chatplatform.api.exceptions import UNAVAILABLE

logger = logging.getLogger("tags.cache")

# Values kept here are plain data (str, bytes, bool, tuples, lists, dicts): never a project class,
# whose pickle a later release might not be able to load.
GENERATION_KEY = "tags:generation"
T = TypeVar("T")


def generation() -> str:
    return generations.current(GENERATION_KEY)


def invalidate() -> None:
    """Make every cached tag entry stale; called by every write."""
    generations.replace(GENERATION_KEY)


# What a process read is also kept in its memory for a second under the same generation: a
# converse turn reads its tag instructions every time, and each read of the shared cache is a
# round trip to Redis.
_kept = generations.LocalCopies(GENERATION_KEY, lifetime=generations.LOCAL_SECONDS)


def cached(name: str, compute: Callable[[], T], *, keep: Callable[[T], bool] | None = None) -> T:
    """`compute()` memoised under `name` for CHAT_TAG_CACHE_SECONDS (0 turns the cache off).
    A value for which `keep` says False is returned but not stored (a `dontCacheThis` read).

    The generation is read before `compute` runs: rows read before a write commits are stored
    under a generation that the write's after-commit invalidation replaces, so no reader sees them.
    """
    if settings.CHAT_TAG_CACHE_SECONDS <= 0:
        return compute()
    return _kept.get(name, lambda: _shared(name, compute, keep), keep=keep)


def _shared(name: str, compute: Callable[[], T], keep: Callable[[T], bool] | None) -> T:
    key = f"tags:{generation()}:{name}"
    try:
        hit: Any = cache.get(key)
    except UNAVAILABLE:
        raise  # the cache is down: fail fast (503)
    except Exception:  # an entry this build cannot read (written by another release): a miss
        logger.warning("unreadable tag cache entry %s; recomputing", key, exc_info=True)
        hit = None
    if hit is not None:
        return hit
    value = compute()
    if keep is None or keep(value):
        cache.set(key, value, timeout=settings.CHAT_TAG_CACHE_SECONDS)
    return value
