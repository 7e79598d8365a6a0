"""The production ASGI server: uvicorn, with a bounded drain of turns on SIGTERM and a once-a-second tick.

    python -m chatplatform.server chatplatform.asgi:application [uvicorn's options]

On SIGTERM (or Ctrl-C) it stops accepting connections and turns at once, lets the turns under
way (and the child processes parsing uploads, chatplatform.children) finish for up to
CHAT_SHUTDOWN_GRACE_SECONDS, then ends the rest (each turn stores its partial answer and tells its
client; a parse's document fails, saying so) and exits (docs/faults.md).

uvicorn's main loop wakes every 100 ms to refresh the Date header, which changes once a second;
each timer wakeup costs the process CPU, so here it wakes once a second, or at once when a signal
asks it to stop (docs/decisions.md).

Its connections are bounded (chatplatform.connections: idle and half-sent request heads closed,
oversized heads refused) and its log lines carry no token (chatplatform.logs); docs/deploy.md.
A malformed or unsafe setting stops it before it listens, with one line naming the variable.
Everything else, the command line included, is uvicorn's.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import socket
import sys
from types import FrameType

import uvicorn
from django.core.exceptions import ImproperlyConfigured
from uvicorn.config import LOGGING_CONFIG, Config

from chatplatform import children, inflight
from chatplatform.safety import refuse_unsafe_settings


class Server(uvicorn.Server):
    """uvicorn's server with a drain of turns on shutdown, and a once-a-second housekeeping tick."""

    _loop: asyncio.AbstractEventLoop | None = None
    _exit_requested: asyncio.Event | None = None

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        if config.http in {"auto", "httptools"}:
            config.http = "chatplatform.connections:BoundedHttpToolsProtocol"

    async def main_loop(self) -> None:
        self._loop, self._exit_requested = asyncio.get_running_loop(), asyncio.Event()
        # on_tick refreshes the Date header and notifies the supervisor only when counter % 10 == 0:
        # with one tick a second, every tick is such a tick.
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit_requested.wait(), timeout=1.0)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        from django.conf import settings  # the application, loaded by now, configured Django

        from chatplatform import db

        for server in self.servers:  # no new connection...
            server.close()
        inflight.stop_accepting()  # ...and no new turn on the connections open
        grace = settings.CHAT_SHUTDOWN_GRACE_SECONDS
        await asyncio.gather(inflight.drain(grace), children.drain(grace))
        await super().shutdown(sockets)
        await asyncio.to_thread(db.close_connections)

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
    importlib.import_module(_module).Server = Server  # type: ignore[attr-defined]
# uvicorn's own log lines (each WebSocket's path and query among them) through the same filter as
# the platform's (settings.LOGGING); the workers of --workers N get this configuration with theirs.
LOGGING_CONFIG["filters"] = {"redact_tokens": {"()": "chatplatform.logs.RedactTokens"}}
for _handler in LOGGING_CONFIG["handlers"].values():
    _handler["filters"] = ["redact_tokens"]


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
    try:
        refuse_unsafe_settings()  # reads the settings: a malformed one raises too
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)
    importlib.import_module("uvicorn.main").main()


if __name__ == "__main__":
    main()
