"""Where a turn's events are kept, so that any client can follow a turn from any process: resume
after a reload, a second tab, another device (docs/api.md, "Resume, stop and approvals").

In the process that runs a turn, its events are a `Turn` (chat.turn.events): readers there follow
it directly. With REDIS_URL every event is also appended to a Redis stream per turn
(`chat:turn:<messageId>`, entry `<n>-0` for event n, `<n>-1` marking the end after event n),
written in batches (one round trip for the events of a moment, not one per token), and kept for
CHAT_STREAM_REPLAY_SECONDS after the turn ends. Another process mirrors a turn its clients follow:
one read of the stream so far, then one blocking read per process for every turn it mirrors
(`Follower`), each mirror a Turn its readers read as the running process's readers do.
`chat:turns:session:<sessionId>` names the session's latest turn; `chat:turns:alive:<id>` lives
while the turn runs (renewed with its lease), so the mirror of a turn whose process died ends
instead of waiting for ever. A stop travels on the channel `chat:turns:control`, which every
process that runs turns listens to.

Without Redis (the embedded default: one process) the kept Turns are the store (chat.turn.store);
with it, chat.turn.redis_store. This module picks one per event loop and is what turns, doors
and readers call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
import weakref
from typing import Any

from django.conf import settings
from django.core.cache import caches

from chat.turn.events import Turn
from chat.turn.redis_store import FOLLOW_BLOCK_MS, RedisStore, latest_key, stream_key
from chat.turn.store import Reader, Store
from chatplatform import redis_cache

logger = logging.getLogger(__name__)

STORE_CONNECTIONS = 500


# One store per event loop: its Turns, and its Redis connections, belong to the loop that made them.
_stores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Store] = weakref.WeakKeyDictionary()


def store() -> Store:
    loop = asyncio.get_running_loop()
    found = _stores.get(loop)
    if found is None:
        cache = caches["default"]
        if isinstance(cache, redis_cache.RedisCache) and settings.CHAT_STREAM_REPLAY_SECONDS > 0:
            following = cache.async_write_client(max_connections=2, blocking_seconds=FOLLOW_BLOCK_MS / 1000)
            # Resumes come in bursts (a deploy reconnects every tab at once): they do not wait for a connection.
            found = RedisStore(cache.async_write_client(max_connections=STORE_CONNECTIONS), following)
        else:
            found = Store()
        _stores[loop] = found
    return found


def forget_deleted(sender: Any, *, session_ids: list[str], message_ids: list[str], **kwargs: Any) -> None:
    """Deleted sessions' kept events go with them (docs/data.md): from this process's stores and
    from Redis. Connected to chat.governance.services.sessions_deleted by chat.apps."""
    for loop, found in list(_stores.items()):
        with contextlib.suppress(RuntimeError):  # a loop closed meanwhile has nothing left to keep
            loop.call_soon_threadsafe(found.forget_sessions, session_ids)
    cache = caches["default"]
    if not isinstance(cache, redis_cache.RedisCache):
        return
    keys = [stream_key(message_id) for message_id in message_ids] + [latest_key(session_id) for session_id in session_ids]
    try:
        client = cache._cache.get_client(write=True)
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
    except Exception:  # the sessions are gone; their events expire after CHAT_STREAM_REPLAY_SECONDS anyway
        logger.warning("kept events of %d deleted sessions could not be dropped from Redis", len(session_ids), exc_info=True)


async def resume(session_id: uuid.UUID, last_event_id: str | None) -> Reader | None:
    """A reader of the session's latest turn after `last_event_id`; None when there is none to follow."""
    return await store().open(session_id, last_event_id)


async def turn_of(message_id: str) -> Turn | None:
    """The turn writing the answer `message_id` (running, or kept after it ended), from any process; None when none is kept."""
    return await store().turn_of(message_id)


async def answer_call(session_id: uuid.UUID, call_id: str, content: str) -> bool:
    """Hand a frontend tool's result to the session's running turn, in whichever process runs it;
    whether one waits for it (across processes: whether the session's turn still runs)."""
    return await store().answer_call(session_id, call_id, content)


async def abandon_calls(session_id: uuid.UUID, content: str) -> None:
    """End the waits of the session's turn for its frontend tools' results (a new message came
    instead), in whichever process runs it: `content` is each call's result."""
    await store().abandon_calls(session_id, content)


async def stop(session_id: uuid.UUID) -> bool:
    """Stop the session's running turn, in whichever process runs it; whether one was running."""
    return await store().stop(session_id)
