"""bench/knowledge_turn: what a knowledge base with `strategy: always` adds to a turn's first token.

A platform process (uvicorn; SQLite, or a throwaway PostgreSQL database when DATABASE_URL is set)
and the scripted model server (its own process, 300 ms to the first token) serve two agents that
differ only in one knowledge base of `--documents` generated documents searched before the model
is called. Sequential SSE turns alternate between them; the script prints each one's TTFT p50,
their ratio, and the query's own time through the query endpoint.

    .venv/bin/python bench/knowledge_turn.py [--documents 1000] [--turns 30]

Target (docs/decisions.md): TTFT with the knowledge base ≤ 1.05 × without, plus the measured query time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import manage, scripted_model, throwaway_database  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

WORDS = [
    "dock",
    "shift",
    "pallet",
    "invoice",
    "carrier",
    "forklift",
    "inventory",
    "freight",
    "manifest",
    "route",
    "depot",
    "quota",
    "supplier",
    "audit",
]


def sse_ttft(client: httpx.Client, token: str, agent: str) -> float:
    body = {
        "chatAppId": f"app-{agent}",
        "agentId": agent,
        "message": "Which dock handles freight audits?",
        "features": {},
        "source": "user",
    }
    started = time.perf_counter()
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    with client.stream("POST", "/api/chat/converse", json=body, headers=headers) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line == "event: delta":
                return time.perf_counter() - started
            if line == "event: error":
                raise RuntimeError("error event")
    raise RuntimeError("no delta")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=30)
    options = parser.parse_args()
    with scripted_model(["--tokens", "20", "--first-token-delay", "0.3", "--token-delay", "0.01"]) as model_url:
        with tempfile.TemporaryDirectory() as folder, throwaway_database(os.environ.get("DATABASE_URL"), folder) as database_url:
            env = {
                **os.environ,
                "DATABASE_URL": database_url,
                "OPENAI_BASE_URL": model_url,
                "OPENAI_API_KEY": "unused",
                "CHAT_TITLE_MODEL": "offline",
                "CHAT_RATE_LIMITS": json.dumps({"chat": 10**9, "admin": 10**9}),
                "LOG_LEVEL": "WARNING",
            }
            manage(env, "migrate", "--noinput")
            token = manage(env, "issue_token", "bench-user").strip()
            admin = {"Authorization": f"Bearer {manage(env, 'issue_token', 'bench-admin', '--admin').strip()}"}
            with asgi_server(env) as server, httpx.Client(base_url=server.url, timeout=60) as client:

                def post(path: str, payload: dict) -> dict:
                    response = client.post(f"/api/chat-admin/{path}", json=payload, headers=admin)
                    response.raise_for_status()
                    return response.json()

                base = {
                    "knowledgeBaseId": "warehouse",
                    "name": "Warehouse",
                    "description": "Warehouse notes.",
                    "retrieval": {"strategy": "always"},
                }
                post("knowledge-base", {"knowledgeBase": base})
                rng = random.Random(7)
                started = time.perf_counter()
                for number in range(options.documents):
                    text = "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(60)) for _ in range(3))
                    post("knowledge-base/warehouse/documents", {"document": {"title": f"Note {number}", "text": text}})
                print(f"{options.documents} documents indexed through the API in {time.perf_counter() - started:.1f} s")
                for agent, bases in (("with-kb", [{"id": "warehouse"}]), ("without-kb", None)):
                    spec = {"agentId": agent, "basePrompt": "Be brief.", "toolIds": [], "foundationModel": "openai:bench"}
                    post("agent", {"agent": {**spec, "knowledgeBases": bases}})
                    post("chat-app", {"chatApp": {"chatAppId": f"app-{agent}", "title": agent, "agentId": agent}})
                for agent in ("with-kb", "without-kb", "with-kb", "without-kb"):  # warm up
                    sse_ttft(client, token, agent)
                samples: dict[str, list[float]] = {"with-kb": [], "without-kb": []}
                for _ in range(options.turns):
                    for agent in samples:
                        samples[agent].append(sse_ttft(client, token, agent))
                query_times = []
                for _ in range(options.turns):
                    started = time.perf_counter()
                    post("knowledge-base/warehouse/query", {"query": "Which dock handles freight audits?"})
                    query_times.append(time.perf_counter() - started)
        with_kb, without = (statistics.median(samples[k]) * 1000 for k in ("with-kb", "without-kb"))
        query = statistics.median(query_times) * 1000
        backend = "PostgreSQL" if database_url.startswith("postg") else "SQLite"
        print(f"{backend}, {options.documents} documents, {options.turns} turns each, alternating:")
        print(f"  TTFT p50 with the knowledge base {with_kb:.1f} ms, without {without:.1f} ms: {with_kb / without:.3f}x")
        print(f"  the query alone (query endpoint, p50): {query:.1f} ms")
        target = 1.05 * without + query
        print(f"  target: with <= 1.05 x without + the query = {target:.1f} ms: {'met' if with_kb <= target else 'NOT met'}")


if __name__ == "__main__":
    main()
