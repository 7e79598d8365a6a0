"""The production ASGI server: uvicorn, waking once a second when idle instead of ten times.

    python -m chatplatform.server chatplatform.asgi:application [uvicorn's options]

uvicorn's `Server.main_loop` wakes every 100 ms to refresh the Date header (which changes once a
second), check for a requested exit and a request limit. On this kind of VM a process woken by
a timer is charged about a quarter of a millisecond of CPU for it, so those ten wakeups cost an
idle server 2.5 ms of CPU a second and each sequential streamed turn (1.3 s) 2–3 ms of the 5 ms
issue 4 allows (bench/converse.py). Here the loop wakes once a second, or at once when a signal
asks it to stop, so shutting down is no slower. Everything else, the command line included, is
uvicorn's own (`uvicorn.main`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from types import FrameType

import uvicorn


class Server(uvicorn.Server):
    """uvicorn's server with a once-a-second housekeeping tick, woken early by an exit signal."""

    _loop: asyncio.AbstractEventLoop | None = None
    _exit_requested: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._exit_requested = asyncio.get_running_loop(), asyncio.Event()
        # on_tick refreshes the Date header and notifies the supervisor only when counter % 10 == 0:
        # with one tick a second, every tick is such a tick.
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit_requested.wait(), timeout=1.0)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        # A signal handler runs between the loop's waits, not inside them: wake the loop through
        # its self-pipe so that it sees should_exit now, not at the next tick.
        if self._loop is not None and self._exit_requested is not None:
            self._loop.call_soon_threadsafe(self._exit_requested.set)


# uvicorn builds its server from these names: `uvicorn.main.run` for one worker, the supervisor's
# workers with `--workers N`. Set on import, not in main(): each worker is a spawned process that
# imports this module afresh (as __mp_main__) and never runs main(). (`uvicorn.main` as an
# attribute is the package's click command, not the module; hence import_module.)
for _module in ("uvicorn.main", "uvicorn.supervisors.multiprocess"):
    importlib.import_module(_module).Server = Server


def main() -> None:
    importlib.import_module("uvicorn.main").main()


if __name__ == "__main__":
    main()
