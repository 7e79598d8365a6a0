"""`inline` tools: `code` runs as `fn(event, params)` in QuickJS (docs/api.md, "Tools").

The sandbox is the engine itself: QuickJS without its `std`/`os` modules has no file system,
network, process, timers, module loader or host objects (verified by tests/tools_exec), and no
Python callable is ever added to a context. Each call gets a fresh `quickjs.Context` (its own
runtime, cheap to make), so nothing a call leaves in the global object reaches the next one, under
three limits:

- time: the engine interrupts JavaScript (uncatchable by `try`) when the call's deadline passes;
  the limit is re-armed with the time left before every entry into the engine, because QuickJS
  restarts its clock on each entry and an async function enters once per promise job. QuickJS
  counts it in CPU time of the whole process, so while other threads are busy it can stop code
  before the deadline; the error then says so instead of claiming a timeout;
- memory: CHAT_INLINE_MEMORY_MB for the whole runtime;
- stack: CHAT_INLINE_STACK_KB of JavaScript stack, on worker threads created with a C stack
  several times larger, so the engine's own check fires long before the thread's stack ends.

The engine is synchronous and releases the GIL while it runs, so calls run on a small dedicated
pool of worker threads and the event loop never waits for JavaScript. A context is created,
used and freed on one thread (QuickJS runtimes must not change threads).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import quickjs
from django.conf import settings

from tools.executors import ToolError, timed_out

# The asyncio bound waits this much longer than the engine's own deadline, so a timeout is normally
# reported by the engine, with the worker thread already free again.
_GRACE_SECONDS = 0.5
_MIN_THREAD_STACK_BYTES = 8 * 1024 * 1024
_MAX_WORKERS = 16  # each running context may hold CHAT_INLINE_MEMORY_MB

# Evaluated first in every context: a console whose methods do nothing (tool authors log while
# debugging; without it `console.log` would throw), and the driver that calls the tool's
# function, awaits it when it returns a promise, and turns the outcome into one string:
# "r" + JSON of the result, or "e" + the error message. JSON.stringify runs in the engine, under
# its limits; a result longer than the byte limit is refused there, before it is copied out.
_DRIVER = r"""
(() => {
  const noop = () => undefined;
  globalThis.console = { log: noop, info: noop, warn: noop, error: noop, debug: noop, trace: noop };
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const describe = (error) => {
    try {
      if (error instanceof Error) return String(error.name) + ": " + String(error.message);
      if (typeof error === "string") return error;
      const text = stringify(error);
      return "threw " + (text === undefined ? String(error) : text);
    } catch (_) {
      return "threw a value that cannot be described";
    }
  };
  return (fn, eventJson, paramsJson, maxChars) => {
    "use strict";
    let outcome = null;
    const settle = (value) => {
      try {
        const text = stringify(value);
        if (text !== undefined && text.length > maxChars) {
          outcome = "e" + "the result is " + text.length + " characters of JSON, over the limit of " + maxChars + " bytes";
        } else {
          outcome = "r" + (text === undefined ? "null" : text);
        }
      } catch (error) {
        outcome = "e" + "the return value cannot be converted to JSON (" + describe(error) + ")";
      }
    };
    const fail = (error) => { outcome = "e" + describe(error); };
    if (typeof fn !== "function") {
      outcome = "e" + "code is not a JavaScript function";
    } else {
      try {
        const value = fn(parse(eventJson), parse(paramsJson));
        if (value !== null && (typeof value === "object" || typeof value === "function") && typeof value.then === "function") {
          Promise.resolve(value).then(settle, fail);
        } else {
          settle(value);
        }
      } catch (error) {
        fail(error);
      }
    }
    // A long concatenation may be a rope string, which the Python binding cannot read; join flattens it.
    return () => (outcome === null ? null : [outcome].join(""));
  };
})()
"""


_INTERRUPTED = "InternalError: interrupted"  # the engine's time limit; uncatchable in JavaScript
_OUT_OF_MEMORY = "InternalError: out of memory"
_STACK_OVERFLOW = "RangeError: Maximum call stack size exceeded"


class _Expired(Exception):
    pass


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """The worker pool, every thread started now with a C stack big enough for the JS stack limit."""
    global _pool
    if _pool is not None:
        return _pool
    with _pool_lock:
        if _pool is None:
            workers = min(_MAX_WORKERS, max(4, os.cpu_count() or 4))
            stack = max(_MIN_THREAD_STACK_BYTES, 4 * settings.CHAT_INLINE_STACK_KB * 1024)
            previous = threading.stack_size()
            try:
                # stack_size() applies to threads created afterwards, so all workers are started
                # here (each blocks on the barrier until the last exists), not lazily on first use.
                threading.stack_size(stack)
                pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="inline-tool")
                barrier = threading.Barrier(workers + 1)
                for _ in range(workers):
                    pool.submit(barrier.wait, 10)
                barrier.wait(10)
            finally:
                threading.stack_size(previous)
            _pool = pool
    return _pool


def _first_line(message: str) -> str:
    return message.split("\n    at ", 1)[0].strip().splitlines()[0] if message.strip() else "error"


def _run(
    code: str, event_json: str, params_json: str, deadline: float, memory_bytes: int, stack_bytes: int, max_bytes: int
) -> tuple[str, str]:
    """One call in a fresh context, on a worker thread: ("r", json) or ("e", message); ("t", "")
    when the deadline passed, ("t", seconds that were left) when the engine stopped the code early."""
    if time.monotonic() >= deadline:  # waited in the queue past the deadline: do not start
        return "t", ""
    context = quickjs.Context()
    context.set_memory_limit(memory_bytes)
    context.set_max_stack_size(stack_bytes)

    def arm() -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Expired
        context.set_time_limit(remaining)

    try:
        arm()
        driver = context.eval(_DRIVER)
        arm()
        # The newline keeps a trailing `// comment` in `code` from swallowing the parenthesis.
        function = context.eval(f"(\n{code}\n)")
        arm()
        poll = driver(function, event_json, params_json, max_bytes)
        while True:
            outcome = poll()
            if outcome is not None:
                break
            arm()
            if not context.execute_pending_job():
                return "e", "the function returned a promise that never settled (nothing left to run in the engine)"
        kind, message = outcome[0], outcome[1:]
    except _Expired:
        return "t", ""
    except quickjs.StackOverflow:
        kind, message = "e", _STACK_OVERFLOW
    except quickjs.JSException as exc:
        kind, message = "e", _first_line(str(exc))
    if kind == "e":
        if message == _INTERRUPTED:
            # QuickJS measures its limit in CPU time of the whole process (clock()): with other
            # threads busy it fires before the deadline. Say so rather than blame the timeout.
            early = deadline - time.monotonic()
            return "t", f"{early:.3f}" if early > 0.02 else ""
        # Memory and stack exhaustion are ordinary (catchable) JavaScript errors: name the limit.
        if message == _OUT_OF_MEMORY:
            return "e", f"out of memory: inline tools are limited to {memory_bytes // (1024 * 1024)} MB"
        if message == _STACK_OVERFLOW:
            return "e", f"stack overflow: inline tools are limited to {stack_bytes // 1024} KB of JavaScript stack"
    return kind, message


async def run_inline(code: str, event: dict[str, Any], *, timeout: float) -> Any:
    """The JSON result of `fn(event, event.parameters)`; ToolError for a thrown error, a timeout,
    memory or stack exhaustion, a result that is not JSON or is over CHAT_TOOL_RESULT_MAX_BYTES."""
    deadline = time.monotonic() + timeout
    max_bytes = settings.CHAT_TOOL_RESULT_MAX_BYTES
    job = (
        code,
        json.dumps(event),
        json.dumps(event.get("parameters") or {}),
        deadline,
        settings.CHAT_INLINE_MEMORY_MB * 1024 * 1024,
        settings.CHAT_INLINE_STACK_KB * 1024,
        max_bytes,
    )
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout + _GRACE_SECONDS):
            kind, payload = await loop.run_in_executor(_executor(), _run, *job)
    except TimeoutError:
        raise timed_out(timeout) from None
    if kind == "t":
        if payload:
            elapsed = timeout - float(payload)
            raise ToolError(
                f"the tool was stopped after {elapsed:.2f} s of its {timeout:g} s executionTimeout: the JavaScript engine counts "
                "its time limit in CPU time of the whole server process, which other work was also using",
                outcome="timeout",
            )
        raise timed_out(timeout)
    if kind == "e":
        raise ToolError(payload)
    size = len(payload.encode())
    if size > max_bytes:  # the engine counted characters; a non-ASCII result may still be over in bytes
        raise ToolError(f"the result is {size} bytes of JSON, over the limit of {max_bytes} bytes")
    return json.loads(payload)
