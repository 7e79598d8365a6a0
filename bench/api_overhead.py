"""bench/api_overhead: what the platform's API layer costs per request.

Requests per second of `GET /api/chat/user` with a bearer token (JWT check, user lookup, rate
limit, envelope, DRF) next to a bare Django view returning the same JSON, in one run, under the
production ASGI server (uvicorn, one worker). Target: ratio ≥ 0.7.

    .venv/bin/python bench/api_overhead.py [--seconds 5] [--connections 16] [--rounds 3]

Uses a fresh SQLite database in a temporary folder, or DATABASE_URL / REDIS_URL when set.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import loadgen  # noqa: E402
from bench.common import throwaway_database  # noqa: E402
from tests.servers import asgi_server  # noqa: E402


def prepare(env: dict[str, str]) -> tuple[str, str]:
    """Migrate, create the user, return (token, the JSON body of GET /api/chat/user)."""

    def run(*args: str) -> str:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout

    run("migrate", "--noinput")
    token = run("issue_token", "bench-user", "--email", "bench@example.com", "--first-name", "Bench").strip()
    body = run(
        "shell",
        "-c",
        "import json; from chat.models import ChatUser; from chat.serializers import ChatUserSerializer; "
        "print(json.dumps({'success': True, 'user': ChatUserSerializer(ChatUser.objects.get(pk='bench-user')).data}))",
    )
    return token, body.strip().splitlines()[-1]  # shell may print notices before it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        # The budget is raised so every request is served, but it is still counted on each one.
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "bench.settings",
            "SECRET_KEY": "bench-secret-key-" + "x" * 40,
            "CHAT_RATE_LIMITS": json.dumps({"chat": 10**9}),
        }
        with throwaway_database(env.get("DATABASE_URL"), tmp) as database_url:
            env["DATABASE_URL"] = database_url
            totals = run(env, args)
    report(totals)


def run(env: dict[str, str], args: argparse.Namespace) -> dict[str, loadgen.Result]:
    token, body = prepare(env)
    env["BENCH_BARE_BODY"] = body
    backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
    cache = "Redis" if env.get("REDIS_URL") else "local memory"
    load = f"{args.connections} connections, {args.seconds:g} s x {args.rounds} rounds"
    print(f"api_overhead: uvicorn 1 worker, {backend}, {cache} cache, {load}")

    targets = {
        "bare view": ("/bench/bare-user", {}),
        "GET /api/chat/user": ("/api/chat/user", {"Authorization": f"Bearer {token}"}),
    }
    totals = {name: loadgen.Result() for name in targets}
    with asgi_server(env) as server:
        host, port = server.url.removeprefix("http://").split(":")
        # Warm up both paths, and check the API answers 200 (a 429 would flatter it).
        for path, headers in targets.values():
            warm = loadgen.run(host, int(port), path, headers=headers, seconds=1, connections=2)
            assert set(warm.statuses) == {200}, warm.statuses
        for _ in range(args.rounds):  # interleaved, so drift hits both alike
            for name, (path, headers) in targets.items():
                totals[name].add(loadgen.run(host, int(port), path, headers=headers, seconds=args.seconds, connections=args.connections))
    return totals


def report(totals: dict[str, loadgen.Result]) -> None:
    for name, t in totals.items():
        print(f"  {name:<20} {t.rps:8.0f} req/s   p50 {t.percentile(50):6.2f} ms   p99 {t.percentile(99):6.2f} ms   statuses {t.statuses}")
    ratio = totals["GET /api/chat/user"].rps / totals["bare view"].rps
    print(f"  ratio api/bare: {ratio:.2f} (target >= 0.70) {'OK' if ratio >= 0.7 else 'BELOW TARGET'}")
    print(json.dumps({"bench": "api_overhead", "ratio": round(ratio, 3), **{k: round(v.rps) for k, v in totals.items()}}))


if __name__ == "__main__":
    main()
