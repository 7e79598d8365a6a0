"""bench/branches: what branches cost (docs/api.md, "Branches").

1. The messages list (`GET /api/chat/sessions/{sessionId}/messages?limit=200`) of a 200-message
   session with 20 branches (20 of its questions edited or answers regenerated, each version a
   sibling; its current branch 180 messages) against a straight 200-message session, requests
   interleaved on one uvicorn process. Target: no slower, within the run's spread.
2. TTFT of a streamed turn that names its parent (`parentMessageId`: the previous answer) against
   one that continues the current branch without it, interleaved, each on its own session seeded
   with 40 messages. Target: ≤ 1.02×.

    .venv/bin/python bench/branches.py [--requests 300] [--turns 40]

A throwaway database (SQLite, or a new database on the DATABASE_URL server). The scripted model
answers 5 words after 50 ms; the load generator, the model and the platform share the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform, manage  # noqa: E402
from bench.converse import BODY  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

# Run inside `manage.py shell`: the sessions of the bench user, their ids printed as JSON.
SEED = """
import json
from datetime import timedelta
from django.utils import timezone
from chat.sessions.models import ChatMessage, ChatSession
from chat.users.models import ChatUser

user, _ = ChatUser.objects.get_or_create(user_id="bench-user")
start = timezone.now() - timedelta(hours=1)
clock = iter(range(10_000))


def message(session, parent, index):
    source = "user" if index % 2 == 0 else "assistant"
    text = f"{source} message {index}: " + "words of a conversation " * 20
    return ChatMessage(session=session, user_id=user.pk, source=source, message=text, parent=parent,
                       timestamp=start + timedelta(milliseconds=next(clock)))


def straight(count):
    session = ChatSession.objects.create(user=user, chat_app_id="demo", agent_id="demo-assistant")
    made, parent = [], None
    for index in range(count):
        parent = message(session, parent, index)
        made.append(parent)
    ChatMessage.objects.bulk_create(made)
    return session, made


def branched(count, branches):
    # 20 versions beside the trunk: every 9th message of the trunk gets a sibling, created later
    session, trunk = straight(count - branches)
    versions = [message(session, trunk[position].parent, position) for position in range(1, branches * 9, 9)]
    ChatMessage.objects.bulk_create(versions)
    # the trunk's end created last: it stays the current branch
    last = message(session, trunk[-1].parent, count - branches - 1)
    ChatMessage.objects.filter(pk=trunk[-1].pk).update(timestamp=last.timestamp)
    return session


flat, _ = straight(200)
tree = branched(200, 20)
with_parent, made_a = straight(40)
without_parent, made_b = straight(40)
print(json.dumps({"straight": str(flat.pk), "branched": str(tree.pk), "withParent": str(with_parent.pk),
                  "withParentLeaf": str(made_a[-1].pk), "withoutParent": str(without_parent.pk)}))
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def listing(url: str, token: str, sessions: dict[str, str], requests: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    times: dict[str, list[float]] = {"straight": [], "branched": []}
    counts: dict[str, int] = {}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        for name in times:  # warm up
            for _ in range(20):
                client.get(f"/api/chat/sessions/{sessions[name]}/messages?limit=200").raise_for_status()
        for _ in range(requests):
            for name in times:
                started = time.perf_counter()
                response = client.get(f"/api/chat/sessions/{sessions[name]}/messages?limit=200")
                times[name].append(time.perf_counter() - started)
                response.raise_for_status()
                counts[name] = len(response.json()["messages"])
    print(f"messages list, {requests} requests each, interleaved (ms):")
    for name, values in times.items():
        print(
            f"  {name:9} {counts[name]:4} messages listed  p50 {statistics.median(values) * 1000:6.2f}  "
            f"p95 {pct(values, 0.95) * 1000:6.2f}  mean {statistics.mean(values) * 1000:6.2f} ± {statistics.stdev(values) * 1000:5.2f}"
        )
    ratio = statistics.median(times["branched"]) / statistics.median(times["straight"])
    print(f"  branched / straight p50: {ratio:.3f}×")


async def ttft(url: str, token: str, sessions: dict[str, str], turns: int) -> None:
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    times: dict[str, list[float]] = {"without parentMessageId": [], "with parentMessageId": []}
    parent = sessions["withParentLeaf"]

    async def turn(client: aiohttp.ClientSession, body: dict) -> tuple[float, str]:
        started, first = time.perf_counter(), None
        previous = b""
        async with client.post(f"{url}/api/chat/converse", json=body, headers=headers) as response:
            response.raise_for_status()
            async for line in response.content:
                if first is None and line == b"event: delta\n":
                    first = time.perf_counter() - started
                if previous == b"event: done\n":
                    return first or float("nan"), json.loads(line.removeprefix(b"data: "))["messageId"]
                previous = line
        raise RuntimeError("stream ended without done")

    async with aiohttp.ClientSession() as client:
        for index in range(turns + 5):
            # Each goes first every other time: a turn's work after its `done` overlaps the next one.
            if index % 2:
                plain, _ = await turn(client, {**BODY, "sessionId": sessions["withoutParent"]})
            named, parent = await turn(client, {**BODY, "sessionId": sessions["withParent"], "parentMessageId": parent})
            if not index % 2:
                plain, _ = await turn(client, {**BODY, "sessionId": sessions["withoutParent"]})
            if index >= 5:  # the first turns warm up
                times["without parentMessageId"].append(plain)
                times["with parentMessageId"].append(named)
    print(f"TTFT of a streamed turn, {turns} each, interleaved (ms; the model's first token after 50 ms):")
    for name, values in times.items():
        print(f"  {name:24} p50 {statistics.median(values) * 1000:6.2f}  p95 {pct(values, 0.95) * 1000:6.2f}")
    ratio = statistics.median(times["with parentMessageId"]) / statistics.median(times["without parentMessageId"])
    print(f"  with / without p50: {ratio:.3f}×")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    with bench_platform(["--tokens", "5", "--first-token-delay", "0.05", "--token-delay", "0.001"]) as (env, token, admin):
        backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
        print(f"branches: {backend}, one uvicorn process")
        sessions = json.loads(manage(env, "shell", "-c", SEED).strip().splitlines()[-1])
        with asgi_server(env) as server:
            agent = {"agentId": "demo-assistant", "foundationModel": "openai:bench", "knowledgeBases": None}
            httpx.post(f"{server.url}/api/chat-admin/agent", json={"agent": agent}, headers={"Authorization": f"Bearer {admin}"})
            listing(server.url, token, sessions, args.requests)
            asyncio.run(ttft(server.url, token, sessions, args.turns))


if __name__ == "__main__":
    main()
