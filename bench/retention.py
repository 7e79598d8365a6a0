"""bench/retention: what deleting expired sessions costs, and what it and the usage-limit check cost a turn.

One platform process (uvicorn, one worker) on a throwaway database (SQLite, or a new PostgreSQL
database on the server of DATABASE_URL), with the scripted model server of bench/converse.py.

- retention: `--sessions` expired sessions of `--messages` messages each are written, then
  `apply_retention` deletes them (in this process, as the worker would) while turns run against
  the server; its time, and the TTFT p50 of the turns during it against turns without it, in one
  run (target: at most 1.2x);
- usage limits: TTFT p50 of turns in a chat app with `usageLimits` on against one without, the
  turns alternating, in one run (target: at most 1.02x).

    .venv/bin/python bench/retention.py [--sessions 10000] [--messages 10] [--turns 40]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/retention.py --sessions 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform, percentile  # noqa: E402
from bench.converse import BODY, through_sse  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

LIMITED = {"usageLimits": {"enabled": True, "perUser": {"daily": {"tokens": 10**12}, "monthly": {"costUsd": 10**6}}}}


def write_expired(sessions: int, messages: int) -> None:
    """`sessions` sessions of chat app `expiring` (retentionDays 30), last active 40 days ago."""
    from django.utils import timezone

    from chat.models import ChatApp, ChatMessage, ChatSession, ChatUser

    ChatApp.objects.update_or_create(
        chat_app_id="expiring", defaults={"title": "Expiring", "agent_id": "demo-assistant", "retention_days": 30}
    )
    ChatUser.objects.get_or_create(user_id="bench-old")
    then = timezone.now() - timedelta(days=40)
    for start in range(0, sessions, 1000):
        batch = [
            ChatSession(
                session_id=uuid.uuid4(),
                user_id="bench-old",
                chat_app_id="expiring",
                agent_id="demo-assistant",
                create_date=then,
                last_update=then,
            )
            for _ in range(min(1000, sessions - start))
        ]
        ChatSession.objects.bulk_create(batch)
        ChatMessage.objects.bulk_create(
            ChatMessage(
                session_id=session.pk,
                user_id="bench-old",
                source="user" if n % 2 == 0 else "assistant",
                message=f"message {n}",
                timestamp=then,
            )
            for session in batch
            for n in range(messages)
        )


def p50(values: list[float]) -> float:
    return percentile(values, 50) * 1000


async def turns(url: str, token: str, count: int, chat_app_id: str = "demo", while_running: threading.Event | None = None) -> list[float]:
    """TTFT of `count` turns one after another (while `while_running` is set, when given)."""
    ttfts = []
    async with aiohttp.ClientSession() as client:
        for _ in range(count):
            if while_running is not None and not while_running.is_set():
                break
            ttft, _ = await through_sse(client, url, token, {**BODY, "chatAppId": chat_app_id})
            ttfts.append(ttft)
    return ttfts


def retention_run(url: str, token: str, args: argparse.Namespace) -> None:
    from chat.governance.services import apply_retention

    started = time.perf_counter()
    write_expired(args.sessions, args.messages)
    print(f"wrote {args.sessions} sessions, {args.sessions * args.messages} messages in {time.perf_counter() - started:.1f} s")
    without = asyncio.run(turns(url, token, args.turns))
    running, result = threading.Event(), {}

    def delete() -> None:
        began = time.perf_counter()
        result["counts"] = apply_retention()
        result["seconds"] = time.perf_counter() - began
        running.clear()

    running.set()
    worker = threading.Thread(target=delete)
    worker.start()
    during = asyncio.run(turns(url, token, 10**9, while_running=running))
    worker.join()
    deleted = result["counts"].get("expiring", {})
    rate = deleted.get("sessions", 0) / result["seconds"]
    print(
        f"apply_retention: {deleted.get('sessions', 0)} sessions, {deleted.get('messages', 0)} messages in {result['seconds']:.1f} s"
        f" ({rate:.0f} sessions/s)"
    )
    ratio = p50(during) / p50(without)
    print(f"TTFT p50 without retention {p50(without):.1f} ms ({len(without)} turns)", end=", ")
    print(f"during it {p50(during):.1f} ms ({len(during)} turns): {ratio:.2f}x")


def limits_run(url: str, token: str, args: argparse.Namespace) -> None:
    async def alternate() -> tuple[list[float], list[float]]:
        on, off = [], []
        async with aiohttp.ClientSession() as client:
            for n in range(2 * args.turns):
                # on, off, off, on, … so that neither side is always second.
                limited = n % 4 in (0, 3)
                ttft, _ = await through_sse(client, url, token, {**BODY, "chatAppId": "limited" if limited else "demo"})
                (on if limited else off).append(ttft)
        return on, off

    on, off = asyncio.run(alternate())
    print(f"TTFT p50 with usage limits {p50(on):.1f} ms, without {p50(off):.1f} ms ({len(on)} turns each): {p50(on) / p50(off):.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--turns", type=int, default=40)
    args = parser.parse_args()
    model = ["--tokens", "20", "--first-token-delay", "0.05", "--token-delay", "0.005"]
    with bench_platform(model, CHAT_TITLE_MODEL="offline") as (env, token, admin):
        os.environ.update(env)  # this process writes and deletes the sessions, as the worker would
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
        import django

        django.setup()
        backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
        print(f"retention and usage limits: one process, {backend}; model: 50 ms to first token, 20 tokens at 5 ms")
        with asgi_server(env) as server:
            headers = {"Authorization": f"Bearer {admin}"}
            agent = {"agentId": "demo-assistant", "foundationModel": "openai:bench", "knowledgeBases": None}
            httpx.post(f"{server.url}/api/chat-admin/agent", json={"agent": agent}, headers=headers).raise_for_status()
            limited = {"chatAppId": "limited", "title": "Limited", "agentId": "demo-assistant", "features": LIMITED}
            httpx.post(f"{server.url}/api/chat-admin/chat-app", json={"chatApp": limited}, headers=headers).raise_for_status()
            asyncio.run(turns(server.url, token, 5))  # warm-up
            limits_run(server.url, token, args)
            retention_run(server.url, token, args)


if __name__ == "__main__":
    main()
