"""Work that outlives the request that started it (a turn whose client left), tracked so that
tests can wait for it and a shutdown can drain it (chatplatform.server)."""

from __future__ import annotations

import asyncio
import logging

logger = logging.getLogger(__name__)

_tasks: set[asyncio.Task[None]] = set()  # the event loop keeps only weak references to tasks
_after: set[asyncio.Task[None]] = set()  # what turns leave behind as they end (their last events on their way to Redis)
_accepting = True


def accepting() -> bool:
    """False once the process is shutting down: new work is refused."""
    return _accepting


def stop_accepting() -> None:
    global _accepting
    _accepting = False


def track(task: asyncio.Task[None]) -> None:
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def track_after(task: asyncio.Task[None]) -> None:
    """Work turns leave behind, which a shutdown's drain lets finish after them."""
    _after.add(task)
    task.add_done_callback(_after.discard)


def _here(tasks: set[asyncio.Task[None]] = _tasks) -> list[asyncio.Task[None]]:
    loop = asyncio.get_running_loop()
    return [task for task in tasks if task.get_loop() is loop]


async def wait() -> None:
    """Wait until every tracked task of this event loop has finished."""
    while tasks := _here():
        await asyncio.gather(*tasks, return_exceptions=True)


async def drain(grace: float, cleanup: float = 10.0) -> None:
    """Let tracked work finish for `grace` seconds, then cancel what is left and give it `cleanup`
    seconds to end (a cancelled turn stores its partial answer and tells its client). What the
    turns left behind (`track_after`) gets `cleanup` too."""
    tasks = _here()
    if tasks:
        logger.info("waiting up to %g s for %d turns to finish", grace, len(tasks))
        _, pending = await asyncio.wait(tasks, timeout=grace)
        if pending:
            logger.warning("ending %d turns still running after %g s", len(pending), grace)
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=cleanup)
    if after := _here(_after):
        await asyncio.wait(after, timeout=cleanup)
