"""Request threads kept from one request to the next (docs/decisions.md, "The converse path's speed").

Django's ASGI handler runs a request's sync code (a sync view, the request signals' receivers, the
response's close) on a thread of that request's own: asgiref starts a one-thread executor for each
request and, when it ends, a second thread to join the first. `RequestThreads` enters the
request's thread-sensitive context itself, with an executor taken from a pool of idle ones and
given back when the request is over; Django's handler, finding the context entered, uses it.
Each request still has a thread to itself for as long as it runs, as asgiref promises. A task the
request started that outlives it (a turn goes on after its client left) and then calls sync code
gets a thread of its own from asgiref, as before: the context no longer names the pooled one.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from asgiref.sync import SyncToAsync, ThreadSensitiveContext

# Idle threads kept beyond that are shut down: a burst's threads do not outlive it.
KEEP_IDLE = 32


class RequestThreads:
    """ASGI middleware: each HTTP request's sync code on a pooled one-thread executor."""

    def __init__(self, inner: Any, keep_idle: int = KEEP_IDLE) -> None:
        self.inner = inner
        self.keep_idle = keep_idle
        self.idle: list[ThreadPoolExecutor] = []
        self.lock = threading.Lock()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.inner(scope, receive, send)
        with self.lock:
            executor = self.idle.pop() if self.idle else None
        if executor is None:
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")
        try:
            async with ThreadSensitiveContext() as context:
                # The executor asgiref would start for this context at its first sync call; taken
                # back before the context ends, so asgiref neither shuts it down nor joins its thread.
                SyncToAsync.context_to_thread_executor[context] = executor
                try:
                    await self.inner(scope, receive, send)
                finally:
                    SyncToAsync.context_to_thread_executor.pop(context, None)
        finally:
            with self.lock:
                kept = len(self.idle) < self.keep_idle
                if kept:
                    self.idle.append(executor)
            if not kept:
                executor.shutdown(wait=False)  # its thread ends once the work it was given is done
