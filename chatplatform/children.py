"""Work on untrusted input run in a child process with limits, so that it cannot starve the server.

Parsing a file someone uploaded (a PDF whose page inflates to 70 MB of text) is CPU-bound Python:
in the server's process it would hold the interpreter lock for as long as it runs, and every
other request would wait (docs/deploy.md, "Limits on hostile input"). Here it runs as `python -m <module>` in a process of
its own: the caller's thread only waits on a pipe. The child gets an address-space limit and a
CPU-time limit (set by the parent with prlimit, before the input is sent) and a lower CPU priority,
and is killed at its wall-clock deadline, or when the server shuts down and its grace has passed
(chatplatform.server).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent

_NICENESS = 10
_running: set[subprocess.Popen[bytes]] = set()
_lock = threading.Lock()
_stopping = False


class ChildFailed(Exception):
    """The child did not answer: `reason` says why (a limit, a crash, a shutdown)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TimeLimit(ChildFailed):
    pass


class MemoryLimit(ChildFailed):
    pass


def run(module: str, payload: bytes, *, args: list[str], seconds: float, memory_mb: int) -> bytes:
    """The standard output of `python -m module *args` fed `payload` on its standard input.

    TimeLimit past `seconds` (wall clock, or CPU), MemoryLimit when the child could not allocate
    within `memory_mb`, ChildFailed when it exited otherwise than with 0 or the server is stopping."""
    with _lock:
        if _stopping:
            raise ChildFailed("the server is shutting down")
        child = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        _running.add(child)
    try:
        try:
            # Set from here, not by a preexec_fn in the child, which is unsafe in a threaded server.
            # The child reads nothing before its input comes, after these.
            memory = memory_mb * 1024 * 1024
            resource.prlimit(child.pid, resource.RLIMIT_AS, (memory, memory))
            cpu = math.ceil(seconds) + 1
            resource.prlimit(child.pid, resource.RLIMIT_CPU, (cpu, cpu + 1))  # SIGXCPU, then SIGKILL
            # Below the server's own priority: on a busy machine its requests get the cores first.
            os.setpriority(os.PRIO_PROCESS, child.pid, _NICENESS)
        except ProcessLookupError:
            pass  # it ended already: its exit status says how
        try:
            output, stderr = child.communicate(payload, timeout=seconds)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise TimeLimit(f"took longer than {seconds:g} s") from None
    finally:
        with _lock:
            _running.discard(child)
    if child.returncode == 0:
        return output
    if _stopping:
        raise ChildFailed("the server shut down while it ran")
    if child.returncode in (-signal.SIGXCPU, -signal.SIGKILL):  # its CPU-time limit
        raise TimeLimit(f"took longer than {seconds:g} s")
    if b"MemoryError" in stderr:
        raise MemoryLimit(f"needed more than {memory_mb} MB")
    logger.warning("child %s exited with %s: %s", module, child.returncode, stderr.decode(errors="replace")[-2000:])
    raise ChildFailed(f"its process failed (exit status {child.returncode})")


async def drain(grace: float) -> None:
    """On shutdown: no new child; the running ones get `grace` seconds, then they are killed (their
    callers see ChildFailed, so a request waiting on one answers and its connection closes)."""
    global _stopping
    with _lock:
        _stopping = True
    deadline = time.monotonic() + grace
    while True:
        with _lock:
            left = [child for child in _running if child.poll() is None]
        if not left:
            return
        if time.monotonic() >= deadline:
            logger.warning("killing %d child processes still running after %g s", len(left), grace)
            for child in left:
                child.kill()
            return
        await asyncio.sleep(0.1)
