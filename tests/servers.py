"""Real server processes on loopback for tests that need more than one process."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def database_url_of_test_db() -> str:
    """The URL of the database this test run uses, for a child process to share it (PostgreSQL, or
    the SQLite file tests/conftest.py gives the test run)."""
    params = connection.settings_dict
    if connection.vendor == "sqlite":
        name = str(params["NAME"])
        if name == ":memory:" or name.startswith("file:"):
            raise RuntimeError("an in-memory SQLite test database cannot be shared with another process")
        return f"sqlite:///{name}"
    if connection.vendor != "postgresql":
        raise RuntimeError("only a PostgreSQL or SQLite file test database can be shared with another process")
    user = params.get("USER") or ""
    password = f":{params['PASSWORD']}" if params.get("PASSWORD") else ""
    host = params.get("HOST") or "127.0.0.1"
    port = params.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{params['NAME']}"


def manage(env: dict[str, str], *args: str) -> str:
    """`python manage.py ARGS` in a process of its own; its standard output."""
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def sqlite_env(database: Path, **extra: str) -> dict[str, str]:
    """The environment of a platform process on its own SQLite file, on the embedded cache unless `extra` names a REDIS_URL."""
    env = {name: value for name, value in os.environ.items() if name != "REDIS_URL"}
    return {**env, "DATABASE_URL": f"sqlite:///{database}", "DEBUG": "true", "LOG_LEVEL": "WARNING", **extra}


def migrated_copy(template: Path, folder: Path) -> Path:
    """A fresh database file for a platform process, copied from a migrated one (migrating takes seconds)."""
    if not template.exists():
        manage(sqlite_env(template), "migrate", "--noinput")
    copy = folder / "db.sqlite3"
    shutil.copy(template, copy)
    return copy


@dataclass(frozen=True)
class ServerProcess:
    url: str  # base URL, e.g. http://127.0.0.1:50123
    process: subprocess.Popen[bytes]
    log_file: IO[bytes]  # what the server wrote, standard output and error

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def log(self) -> str:
        self.log_file.seek(0)
        return self.log_file.read().decode(errors="replace")

    def __str__(self) -> str:
        return self.url


@contextmanager
def asgi_server(
    env: dict[str, str] | None = None, *, workers: int = 1, app: str = "chatplatform.asgi:application", options: Sequence[str] = ()
) -> Iterator[ServerProcess]:
    """`python -m chatplatform.server <app> [options]` (uvicorn; the platform by default) on a free
    loopback port; yields its URL, process and log."""
    port = free_port()
    log = tempfile.TemporaryFile()  # noqa: SIM115 - not a pipe: a chatty server must never block on a full pipe
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chatplatform.server",
            app,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--lifespan",
            "off",
            "--ws-per-message-deflate",  # as `make run`: compressing each small delta frame costs more CPU than it saves bytes
            "false",
            "--log-level",
            "warning",
            *options,  # uvicorn takes an option's last value: these win
        ],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=log,
        stderr=log,
    )
    deadline = time.monotonic() + 90
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"server exited: {log.read().decode(errors='replace')[-2000:]}") from None
                if time.monotonic() > deadline:
                    raise TimeoutError("server did not start within 90 s") from None
                time.sleep(0.05)
        yield ServerProcess(f"http://127.0.0.1:{port}", process, log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
