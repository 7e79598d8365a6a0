"""bench/session_list: `GET /api/chat/sessions` against the cheapest authenticated read.

A user with 800 sessions (a few pinned); requests per second of `GET /api/chat/sessions` (the
default page of 20) and of `GET /api/chat/user`, each with the user's bearer token, at 1, 10 and
50 connections, interleaved round by round so the machine's drift hits both alike, under the
production ASGI server (uvicorn, one worker). Target (docs/decisions.md): the list at ≥ 0.8× the
user's requests per second at every level. The server's CPU per request (from /proc) is printed
too: on a machine loaded by other work it moves less than requests per second do. `--profile` samples the server with py-spy while
the list is served and prints where its CPU went (bench/profile.py).

    .venv/bin/python bench/session_list.py [--seconds 3] [--rounds 3] [--connections 1,10,50] [--profile]

Uses a fresh SQLite database in a temporary folder, or DATABASE_URL / REDIS_URL when set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import loadgen  # noqa: E402
from bench.common import manage, throwaway_database  # noqa: E402
from bench.converse import cpu_seconds  # noqa: E402
from bench.profile import Profile  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

SEED = """
import datetime
from django.utils import timezone
from chat.models import ChatSession, ChatUser
user = ChatUser.objects.get(pk="bench-user")
now = timezone.now()
ChatSession.objects.bulk_create(
    ChatSession(user=user, chat_app_id="demo", agent_id="demo-assistant", title=f"Session {n}",
                create_date=now - datetime.timedelta(minutes=n), last_update=now - datetime.timedelta(minutes=n),
                pinned_at=now if n % 200 == 0 else None)
    for n in range(800)
)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", default="1,10,50")
    parser.add_argument("--profile", action="store_true", help="sample the server with py-spy while it serves the list")
    args = parser.parse_args()
    levels = [int(level) for level in args.connections.split(",")]

    with tempfile.TemporaryDirectory() as tmp, throwaway_database(os.environ.get("DATABASE_URL"), tmp) as database_url:
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "SECRET_KEY": "bench-secret-key-" + "x" * 40,
            "CHAT_RATE_LIMITS": json.dumps({"chat": 10**9}),  # counted on every request, never refused
            "LOG_LEVEL": "WARNING",
        }
        manage(env, "migrate", "--noinput")
        token = manage(env, "issue_token", "bench-user").strip()
        manage(env, "shell", "-c", SEED)
        backend = "PostgreSQL" if database_url.startswith("postg") else "SQLite"
        cache = "Redis" if env.get("REDIS_URL") else "local memory"
        print(f"session_list: uvicorn 1 worker, {backend}, {cache} cache, 800 sessions, {args.seconds:g} s x {args.rounds} rounds")
        headers = {"Authorization": f"Bearer {token}"}
        targets = {"GET /api/chat/user": "/api/chat/user", "GET /api/chat/sessions": "/api/chat/sessions"}
        with asgi_server(env) as server:
            host, port = server.url.removeprefix("http://").split(":")
            profile = Profile(server.pid) if args.profile else None
            for path in targets.values():  # warm up; a 429 or an error would flatter a path
                warm = loadgen.run(host, int(port), path, headers=headers, seconds=1, connections=2)
                assert set(warm.statuses) == {200}, warm.statuses
            head = f"{'connections':>11} {'user req/s':>11} {'list req/s':>11} {'ratio':>6} {'list p50':>9} {'list p99':>9}"
            print(f"{head} {'user CPU/req':>13} {'list CPU/req':>13}")
            ratios = {}
            for level in levels:
                totals = {name: loadgen.Result() for name in targets}
                cpu = dict.fromkeys(targets, 0.0)
                for _ in range(args.rounds):
                    for name, path in targets.items():
                        cpu_before = cpu_seconds(server.pid)
                        if profile and name == "GET /api/chat/sessions":
                            with profile:
                                result = loadgen.run(host, int(port), path, headers=headers, seconds=args.seconds, connections=level)
                        else:
                            result = loadgen.run(host, int(port), path, headers=headers, seconds=args.seconds, connections=level)
                        totals[name].add(result)
                        cpu[name] += cpu_seconds(server.pid) - cpu_before
                user, listed = totals["GET /api/chat/user"], totals["GET /api/chat/sessions"]
                ratios[level] = listed.rps / user.rps
                print(
                    f"{level:>11} {user.rps:>11.0f} {listed.rps:>11.0f} {ratios[level]:>6.2f} "
                    f"{listed.percentile(50):>7.2f}ms {listed.percentile(99):>7.2f}ms "
                    f"{cpu['GET /api/chat/user'] / user.requests * 1000:>10.2f} ms "
                    f"{cpu['GET /api/chat/sessions'] / listed.requests * 1000:>10.2f} ms"
                )
            print(f"target: list >= 0.8x the user's at every level: {'OK' if min(ratios.values()) >= 0.8 else 'BELOW TARGET'}")
            if profile:
                profile.report()


if __name__ == "__main__":
    main()
