"""What the benchmarks share: a throwaway database and running manage.py against it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
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
