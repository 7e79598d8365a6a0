"""What the benchmarks share: a throwaway database, running manage.py against it, and a platform's
environment on both with the scripted model server."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent


def manage(env: dict[str, str], *args: str) -> str:
    """Run `manage.py ARGS` with `env`; its standard output."""
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


@contextmanager
def throwaway_database(url: str | None, folder: str) -> Iterator[str]:
    """A fresh database for the run: SQLite in `folder`, or a new PostgreSQL database on the
    server of DATABASE_URL (created now, dropped afterwards), never the operator's own."""
    if not url or not url.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{folder}/bench.sqlite3"
        return
    parts = urlsplit(url)
    name = f"bench_{os.getpid()}"
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def scripted_model(args: list[str]) -> Iterator[str]:
    """The scripted model server (tests/peers/openai_server.py with `args`) in a process of its own;
    yields its base URL."""
    model = subprocess.Popen([sys.executable, "-m", "tests.peers.openai_server", *args], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert model.stdout is not None
        yield model.stdout.readline().strip()
    finally:
        model.terminate()
        model.wait(timeout=10)


def percentile(samples: Sequence[float], q: float) -> float:
    """The `q`-th percentile (0-100) of `samples` by nearest rank, in their unit; NaN for none."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered), max(1, math.ceil(q / 100 * len(ordered)))) - 1]


def p50_p95_ms(samples: Sequence[float]) -> tuple[float, float]:
    """The median and 95th percentile of samples in seconds, in milliseconds."""
    return percentile(samples, 50) * 1000, percentile(samples, 95) * 1000


@contextmanager
def bench_platform(model_args: list[str], **extra: str) -> Iterator[tuple[dict[str, str], str, str]]:
    """The scripted model server (tests.peers.openai_server with `model_args`) and a throwaway
    database, migrated and seeded with the demo; yields the environment of platform processes on
    them (no rate limit in the way, no trace exporter of the shell's, `extra` on top), a chat
    user's token and an admin's."""
    with (
        scripted_model(model_args) as model_url,
        tempfile.TemporaryDirectory() as tmp,
        throwaway_database(os.environ.get("DATABASE_URL"), tmp) as database_url,
    ):
        env = {
            **{name: value for name, value in os.environ.items() if not name.startswith("OTEL_")},
            "DATABASE_URL": database_url,
            "SECRET_KEY": "bench-secret-key-" + "x" * 40,
            "OPENAI_BASE_URL": model_url,
            "OPENAI_API_KEY": "unused",
            "CHAT_RATE_LIMITS": json.dumps({"chat": 10**9, "admin": 10**9}),
            "LOG_LEVEL": "WARNING",
            **extra,
        }
        manage(env, "migrate", "--noinput")
        manage(env, "seed_demo")
        yield env, manage(env, "issue_token", "bench-user").strip(), manage(env, "issue_token", "bench-admin", "--admin").strip()
