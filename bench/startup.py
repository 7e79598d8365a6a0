"""Start-up times (docs/decisions.md): `manage.py` commands, and `make run`'s restart to its first answer.

    .venv/bin/python bench/startup.py                  # this checkout
    .venv/bin/python bench/startup.py --root /tmp/old  # another checkout (same .venv), for "before"

Each command runs --repeat times in a fresh process against a throwaway SQLite database; the
median wall time is printed. "restart" is what `make run` does on a machine that ran it before:
migrate (nothing to apply) and seed_demo (everything exists), start the server, and the time until
GET /healthz first answers. The first, untimed round creates and seeds the database.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [("help",), ("check",), ("issue_token", "bench-startup-user")]
# What `make run` passes to the server (Makefile).
SERVER_OPTIONS = ["--host", "127.0.0.1", "--workers", "1", "--lifespan", "off", "--ws-per-message-deflate", "false"]


def run(root: Path, env: dict[str, str], *args: str) -> float:
    return timed(root, env, *args)[0]


def timed(root: Path, env: dict[str, str], *args: str) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of `manage.py ARGS`. On a shared, loaded machine the
    wall time grows with the load; the CPU time much less, so both are printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", *args], cwd=root, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def restart(root: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """What `make run` does before serving, then the server to its first answer: (migrate, seed,
    to first answer). A checkout whose Makefile runs `seed_demo --migrate` does both in one."""
    started = time.perf_counter()
    if "seed_demo --migrate" in (root / "Makefile").read_text():
        migrated = started
        run(root, env, "seed_demo", "--migrate")
    else:
        run(root, env, "migrate", "--noinput")
        migrated = time.perf_counter()
        run(root, env, "seed_demo")
    seeded = time.perf_counter()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "chatplatform.server", "chatplatform.asgi:application", *SERVER_OPTIONS, "--port", str(port)],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                    response.read()
                break
            except OSError:
                if server.poll() is not None:
                    raise SystemExit("the server exited before answering") from None
                time.sleep(0.02)
        answered = time.perf_counter()
    finally:
        server.terminate()
        server.wait(timeout=30)
    return migrated - started, seeded - migrated, answered - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    root = options.root.resolve()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{folder}/startup.sqlite3",
            "SECRET_KEY": "bench-startup-" + "x" * 40,
            "CHAT_TASK_BACKEND": "database",
        }
        env.pop("REDIS_URL", None)
        run(root, env, "migrate", "--noinput")
        run(root, env, "seed_demo")  # the untimed first round: a machine that ran `make run` before
        print(f"start-up of {root} (median of {options.repeat}, seconds; load average {os.getloadavg()[0]:.1f})")
        for command in COMMANDS:
            walls, cpus = zip(*(timed(root, env, *command) for _ in range(options.repeat)), strict=True)
            label = f"manage.py {' '.join(command)}"
            print(f"  {label:<42} wall {statistics.median(walls):6.2f} (min {min(walls):.2f})   cpu {statistics.median(cpus):.2f}")
        rounds = [restart(root, env) for _ in range(options.repeat)]
        migrate, seed, total = (statistics.median(values) for values in zip(*rounds, strict=True))
        label = "make run: restart to first answer"
        print(f"  {label:<42} wall {total:6.2f}   (migrate {migrate:.2f}, seed_demo {seed:.2f}, the rest: the server)")


if __name__ == "__main__":
    main()
