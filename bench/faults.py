"""bench/faults: for each fault of docs/faults.md, how long a client waits to hear of it and how long
until turns succeed again; and what the database health checks cost a turn's first token.

The platform runs as its own process (uvicorn), on a throwaway database (SQLite, or a new one on
the server of DATABASE_URL) and a Redis server of the bench's own on a free port; the scripted
model server runs in this process, its answers chosen per fault. The model timeouts are
shortened (first token and idle 3 s, shutdown grace 2 s) so a run takes about a minute.

    .venv/bin/python bench/faults.py [--turns 20]

Targets (docs/faults.md): every fault heard as an error (or a 503) and turns succeeding again without
a restart; Redis faults heard within 2 s; the health checks' TTFT ≤ 1.02× without them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")

import django  # noqa: E402

django.setup()  # tokens are signed with the settings' key, as the platform's

from bench.common import manage, percentile, throwaway_database  # noqa: E402
from tests.conftest import bearer_token  # noqa: E402
from tests.peers import OpenAIServer, Reply  # noqa: E402
from tests.peers.redis_server import RedisProcess  # noqa: E402
from tests.servers import ServerProcess, asgi_server  # noqa: E402

TIMEOUT, GRACE = 3.0, 2.0
TURN = {"chatAppId": "bench", "agentId": "bench", "message": "Tell me something.", "features": {}, "source": "user"}
USER = {"Authorization": f"Bearer {bearer_token('bench-user', expires_in=86400)}"}
HEALTHY = Reply(text=" ".join(f"w{i}" for i in range(20)), first_token_delay=0.05, token_delay=0.005)


def sse_turn(server: ServerProcess, body: dict[str, Any] | None = None) -> tuple[str, float, dict[str, Any]]:
    """('done' | 'error' | the HTTP status, seconds to it, the session event's data)."""
    started, session = time.monotonic(), {}
    headers = {**USER, "Accept": "text/event-stream"}
    with httpx.stream("POST", f"{server.url}/api/chat/converse", json=body or TURN, headers=headers, timeout=60) as response:
        if response.status_code != 200:
            return str(response.status_code), time.monotonic() - started, session
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name == "session":
                session = json.loads(line[6:])
            elif line.startswith("data: ") and name in {"done", "error"}:
                return name, time.monotonic() - started, session
    return "ended", time.monotonic() - started, session


def first_token(server: ServerProcess) -> float:
    started = time.monotonic()
    with httpx.stream(
        "POST", f"{server.url}/api/chat/converse", json=TURN, headers={**USER, "Accept": "text/event-stream"}, timeout=60
    ) as r:
        for line in r.iter_lines():
            if line == "event: delta":
                return time.monotonic() - started
    raise RuntimeError("no delta")


def until_ok(server: ServerProcess, limit: float = 30.0) -> float:
    """Seconds until a turn succeeds again."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        try:
            if sse_turn(server)[0] == "done":
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return float("nan")


def row(name: str, heard: str, after: float, again: float) -> None:
    print(f"{name:<44} {heard:<24} {after * 1000:9.0f} ms {again * 1000:10.0f} ms")


def setup(server: ServerProcess) -> None:
    admin = {"Authorization": f"Bearer {bearer_token('ops', admin=True)}"}
    agent = {"agentId": "bench", "basePrompt": "Be brief.", "toolIds": [], "foundationModel": "openai:bench"}
    for path, payload in (
        ("agent", {"agent": agent}),
        ("chat-app", {"chatApp": {"chatAppId": "bench", "title": "Bench", "agentId": "bench"}}),
    ):
        httpx.post(f"{server.url}/api/chat-admin/{path}", json=payload, headers=admin, timeout=10).raise_for_status()


def model_faults(server: ServerProcess, model: OpenAIServer) -> None:
    cases: list[tuple[str, Callable[[dict], Reply]]] = [
        ("model answers 503 (sent again twice)", lambda body: Reply(status=503)),
        (f"model never answers (first token {TIMEOUT:g} s)", lambda body: Reply(text="late", first_token_delay=120)),
        (f"model stalls after a token (idle {TIMEOUT:g} s)", lambda body: Reply(chunks=["a ", "b"], token_delay=120)),
        ("model dies mid-answer", lambda body: Reply(text="one two three four", break_after=2)),
    ]
    for name, reply in cases:
        model.script(reply)
        heard, after, _ = sse_turn(server)
        model.script(lambda body: HEALTHY)
        row(name, heard, after, until_ok(server))


def database_fault(server: ServerProcess, database_url: str) -> None:
    if not database_url.startswith("postgres"):
        print(f"{'PostgreSQL closes the connections':<44} (SQLite: not measured)")
        return
    sse_turn(server)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    heard, after, _ = sse_turn(server)
    row("PostgreSQL closes the connections", heard, after, until_ok(server))


def redis_faults(server: ServerProcess, redis: RedisProcess) -> None:
    redis.stop()
    heard, after, _ = sse_turn(server)
    redis.start()
    row("Redis stopped", heard, after, until_ok(server))
    redis.freeze()
    heard, after, _ = sse_turn(server)
    redis.thaw()
    row("Redis frozen", heard, after, until_ok(server))


def shutdown(server: ServerProcess, model: OpenAIServer) -> None:
    model.script(lambda body: Reply(text="late", first_token_delay=120))
    outcome: list[tuple[str, float, dict]] = []
    reader = threading.Thread(target=lambda: outcome.append(sse_turn(server)))
    reader.start()
    time.sleep(0.5)
    stopped = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=GRACE + 30)
    exited = time.monotonic() - stopped
    reader.join(10)
    heard = outcome[0][0] if outcome else "nothing"
    print(f"{f'SIGTERM, a turn on a silent model (grace {GRACE:g} s)':<44} {heard:<24} {exited * 1000:9.0f} ms  (process exit)")


def health_check_cost(env: dict[str, str], model: OpenAIServer, turns: int) -> None:
    model.script(lambda body: HEALTHY)
    with asgi_server(env) as checked, asgi_server({**env, "DATABASE_HEALTH_CHECKS": "false"}) as unchecked:
        for server in (checked, unchecked):
            for _ in range(3):
                first_token(server)  # warm up
        samples: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(turns):  # interleaved: the machine's drift hits both alike
            samples["on"].append(first_token(checked))
            samples["off"].append(first_token(unchecked))
    on, off = (percentile(samples[k], 50) * 1000 for k in ("on", "off"))
    print(f"\nTTFT p50 with the database health checks {on:.1f} ms, without {off:.1f} ms: {on / off:.3f}x (target <= 1.02x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=20, help="sequential turns per side for the health-check comparison")
    options = parser.parse_args()
    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # the scripted breaks are not news
    model = OpenAIServer().start()
    model.script(lambda body: HEALTHY)
    with tempfile.TemporaryDirectory() as folder, throwaway_database(os.environ.get("DATABASE_URL"), folder) as database_url:
        redis = RedisProcess(Path(folder))
        redis.start()
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis.url,
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "bench",
            "CHAT_MODEL_FIRST_TOKEN_TIMEOUT": str(TIMEOUT),
            "CHAT_MODEL_IDLE_TIMEOUT": str(TIMEOUT),
            "CHAT_SHUTDOWN_GRACE_SECONDS": str(GRACE),
            "CHAT_TITLE_MODEL": "offline",
            "CHAT_RATE_LIMITS": json.dumps({"chat": 100000}),
            "LOG_LEVEL": "ERROR",
        }
        manage(env, "migrate", "--noinput")
        try:
            print(f"{'fault':<44} {'the client hears':<24} {'after':>12} {'ok again':>13}")
            with asgi_server(env) as server:
                setup(server)
                until_ok(server)
                model_faults(server, model)
                database_fault(server, database_url)
                redis_faults(server, redis)
                shutdown(server, model)
            health_check_cost(env, model, options.turns)
        finally:
            redis.stop()
            model.stop()


if __name__ == "__main__":
    main()
