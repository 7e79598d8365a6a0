"""bench/widget_store: what serving a store-located web component costs (docs/widgets.md, "Web components from the store").

Requests per second and latency of `GET /api/chat/webcomponent/<scope>/<tag>` for a script kept
gzip-encoded in the database-backed widget store (decoded once per stored version and kept in
the cache with its ETag: docs/widgets.md, "Limits"), next to the same request revalidated with `If-None-Match` (304, what a browser sends
once it has the script) and `GET /api/chat/widget-data/<scope>/<tag>`, under the production ASGI
server (uvicorn, one worker). It says what a request costs beyond looking at the stored object's version.

    .venv/bin/python bench/widget_store.py [--kilobytes 100] [--seconds 3] [--connections 8] [--rounds 2]

Uses a fresh SQLite database in a temporary folder, or DATABASE_URL / REDIS_URL when set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import loadgen  # noqa: E402
from bench.common import manage, throwaway_database  # noqa: E402
from tests.servers import asgi_server  # noqa: E402


def script_of(kilobytes: int) -> str:
    """A web component of about this size: a class, then a comment block of varied text."""
    head = 'class BenchWidget extends HTMLElement { connectedCallback() { this.textContent = "bench"; } }\n'
    head += 'customElements.define("bench-widget", BenchWidget);\n'
    lines = [f"// line {n}: {n * 7919 % 104729:06d} the quick brown fox jumps over the lazy dog {n % 97}" for n in range(kilobytes * 16)]
    return (head + "\n".join(lines) + "\n")[: kilobytes * 1024]


def prepare(env: dict[str, str], tmp: str, kilobytes: int) -> str:
    """Migrate, store the script, return an admin token (the definition is written over HTTP later)."""
    manage(env, "migrate", "--noinput")
    path = Path(tmp) / "bench-widget.js"
    path.write_text(script_of(kilobytes), encoding="utf-8")
    manage(env, "store_put", "bench-widgets", "bench-widget.js.gz", str(path), "--encode", "gzip")
    return manage(env, "issue_token", "bench-admin", "--admin").strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilobytes", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "bench.settings",
            "SECRET_KEY": "bench-secret-key-" + "x" * 40,
            "CHAT_RATE_LIMITS": json.dumps({"chat": 10**9}),
        }
        with throwaway_database(env.get("DATABASE_URL"), tmp) as database_url:
            env["DATABASE_URL"] = database_url
            run(env, tmp, args)


def run(env: dict[str, str], tmp: str, args: argparse.Namespace) -> None:
    token = prepare(env, tmp, args.kilobytes)
    auth = {"Authorization": f"Bearer {token}"}
    backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
    print(
        f"widget_store: uvicorn 1 worker, {backend}, a {args.kilobytes} KB script stored gzip, "
        f"{args.connections} connections, {args.seconds:g} s x {args.rounds} rounds"
    )
    with asgi_server(env) as server:
        definition = {
            "scope": "bench",
            "tag": "widget",
            "usageMode": "global",
            "status": "enabled",
            "widget": {
                "type": "web-component",
                "webComponent": {"storeBucket": "bench-widgets", "storeKey": "bench-widget.js.gz", "encoding": "gzip"},
            },
            "renderingContexts": {"inline": True},
            "canBeGeneratedByLlm": False,
            "canBeGeneratedByTool": False,
            "description": "bench",
        }
        response = httpx.post(f"{server.url}/api/chat-admin/tagdef", json={"tagDefinition": definition}, headers=auth, timeout=30)
        assert response.status_code == 200, response.text
        first = httpx.get(f"{server.url}/api/chat/webcomponent/bench/widget", headers=auth, timeout=30)
        assert first.status_code == 200 and len(first.content) == args.kilobytes * 1024, (first.status_code, len(first.content))
        data = httpx.post(f"{server.url}/api/chat/widget-data/bench/widget", json={"data": {"count": 1}}, headers=auth, timeout=30)
        assert data.status_code == 200, data.text
        targets = {
            "script, 200 (decoded)": ("/api/chat/webcomponent/bench/widget", auth),
            "script, 304 (If-None-Match)": ("/api/chat/webcomponent/bench/widget", {**auth, "If-None-Match": first.headers["ETag"]}),
            "widget data GET": ("/api/chat/widget-data/bench/widget", auth),
        }
        host, port = server.url.removeprefix("http://").split(":")
        totals = {name: loadgen.Result() for name in targets}
        for path, headers in targets.values():
            warm = loadgen.run(host, int(port), path, headers=headers, seconds=0.5, connections=2)
            assert set(warm.statuses) <= {200, 304}, warm.statuses
        for _ in range(args.rounds):  # interleaved, so drift hits all alike
            for name, (path, headers) in targets.items():
                totals[name].add(loadgen.run(host, int(port), path, headers=headers, seconds=args.seconds, connections=args.connections))
    for name, t in totals.items():
        print(f"  {name:<28} {t.rps:8.0f} req/s   p50 {t.percentile(50):6.2f} ms   p99 {t.percentile(99):6.2f} ms   statuses {t.statuses}")
    print(json.dumps({"bench": "widget_store", "kilobytes": args.kilobytes, **{k: round(v.rps) for k, v in totals.items()}}))


if __name__ == "__main__":
    main()
