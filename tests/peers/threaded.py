"""Serving an ASGI app with uvicorn in a daemon thread of the test process (the test peers)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


class ThreadedServer:
    """`start()` binds a free loopback port first (known at once, taken by no one else), then
    serves `app` in a daemon thread; `stop()` ends it, gracefully for `graceful` seconds first."""

    def __init__(
        self, app: Any, *, name: str, lifespan: str = "off", backlog: int = 1024, graceful: float = 0.0, tls: dict[str, str] | None = None
    ) -> None:
        self.app, self.name, self.lifespan, self.backlog, self.graceful = app, name, lifespan, backlog, graceful
        self.tls = tls or {}  # uvicorn's ssl_certfile and ssl_keyfile
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(self.backlog)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            interface="asgi3",  # a bound method fools uvicorn's ASGI2/3 detection
            lifespan=self.lifespan,
            log_config=None,  # leave the test process's logging configuration alone
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=1,
            backlog=self.backlog,
            **self.tls,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, name=self.name, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.005)
        return self.port

    def stop(self) -> None:
        if self._server is None or self._thread is None:
            return
        self._server.should_exit = True
        if self.graceful:
            self._thread.join(timeout=self.graceful)
        self._server.force_exit = True  # do not wait for calls or streams still sleeping
        self._thread.join(timeout=5)
        self._server = self._thread = None
