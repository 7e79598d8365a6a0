"""bench/metrics: what the Prometheus metrics (chatplatform.metrics) cost a turn.

In one process, on a throwaway database with the demo data, the same non-streamed converse turn
(the offline model, no delay between its words) runs through the ASGI application with the
metrics on and off (CHAT_METRICS_ENABLED), in alternating rounds so that both see the same
machine. Prints the median time of a turn of each, and their ratio (target ≤ 1.02).

    .venv/bin/python bench/metrics.py [--rounds 10] [--turns 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import manage, throwaway_database


async def turn(application: object, body: bytes, token: str) -> None:
    from asgiref.testing import ApplicationCommunicator

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/api/chat/converse",
        "raw_path": b"/api/chat/converse",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"content-type", b"application/json"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await communicator.receive_output(30)
    assert start["status"] == 200, start
    while (await communicator.receive_output(30)).get("more_body"):
        pass
    await communicator.wait(30)


async def rounds(rounds: int, turns: int) -> dict[bool, list[float]]:
    from django.conf import settings

    from chatplatform.api.authentication import sign_token
    from chatplatform.asgi import application

    token = sign_token({"sub": "bench-metrics", "iat": int(time.time()), "exp": int(time.time()) + 3600})
    body = orjson.dumps({"chatAppId": "demo", "agentId": "demo-assistant", "message": "Hello there", "features": {}, "source": "user"})
    for _ in range(20):  # warm: caches, connections, the first session
        await turn(application, body, token)
    per_turn: dict[bool, list[float]] = {True: [], False: []}
    for index in range(rounds * 2):
        enabled = index % 4 in (0, 3)  # on, off, off, on: a drift over the run weighs on both alike
        settings.CHAT_METRICS_ENABLED = enabled
        started = time.perf_counter()
        for _ in range(turns):
            await turn(application, body, token)
        per_turn[enabled].append((time.perf_counter() - started) / turns)
    return per_turn


def calls_alone(count: int = 20_000) -> float:
    """Microseconds of the metric calls one turn makes (a request, a turn, two model calls), timed alone."""
    from chatplatform import metrics

    started = time.perf_counter()
    for _ in range(count):
        metrics.REQUESTS.labels("converse", "POST", "200").inc()
        metrics.REQUEST_SECONDS.labels("converse").observe(0.01)
        metrics.turn_finished("done", 0.01)
        metrics.model_called("model", "offline", 10, 5, 0.002)
        metrics.model_called("title", "offline", 10, 5, 0.002)
    return (time.perf_counter() - started) / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds of each, alternating")
    parser.add_argument("--turns", type=int, default=50, help="sequential turns per round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, throwaway_database(os.environ.get("DATABASE_URL"), folder) as url:
        # The Chat API budget (100 a minute) would refuse most of the turns of a bench.
        limits = '{"chat": 100000000}'
        env = {**os.environ, "DATABASE_URL": url, "CHAT_OFFLINE_TOKEN_DELAY_MS": "0", "LOG_LEVEL": "WARNING", "CHAT_RATE_LIMITS": limits}
        manage(env, "migrate", "--noinput")
        manage(env, "seed_demo")
        os.environ.update({key: env[key] for key in ("DATABASE_URL", "CHAT_OFFLINE_TOKEN_DELAY_MS", "LOG_LEVEL", "CHAT_RATE_LIMITS")})
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
        # The demo agent's knowledge base would add a search to every turn: the bench measures the turn itself.
        import django

        django.setup()
        from agents.models import AgentDefinition

        AgentDefinition.objects.filter(pk="demo-assistant").update(knowledge_bases=[])
        per_turn = asyncio.run(rounds(args.rounds, args.turns))
        alone = calls_alone()
    on, off = statistics.median(per_turn[True]), statistics.median(per_turn[False])
    print(f"turns: {args.rounds} rounds x {args.turns} sequential non-streamed turns each way, alternating")
    print(f"metrics on : {on * 1000:.3f} ms per turn (median of rounds)")
    print(f"metrics off: {off * 1000:.3f} ms per turn (median of rounds)")
    print(f"ratio on/off: {on / off:.3f} (target <= 1.02)")
    print(f"the metric calls of one turn, timed alone: {alone:.1f} us ({alone / 1e6 / off:.1%} of a turn without metrics)")


if __name__ == "__main__":
    main()
