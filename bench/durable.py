"""bench/durable: what keeping a turn's events costs, and how fast another process resumes or stops it.

Two platform processes (uvicorn, one worker each) share the database and Redis (DATABASE_URL and
REDIS_URL as given; a throwaway database is made on the server of DATABASE_URL), with the scripted
model server of bench/converse.py.

- keeping events: TTFT p50 of bursts of `--streams` SSE turns against a process that keeps every
  event in Redis (CHAT_STREAM_REPLAY_SECONDS=600) and one that keeps none (=0), in one run, the
  bursts alternating on, off, off, on (target: at most 1.03x);
- resume: `--resumers` (and 1) turns running on the first process, each followed by a reader on the
  second from its first event's id; the time from the request to the first event replayed,
  p50 and p99 (target: p50 under 50 ms at 200);
- stop: turns running on the first process, each stopped through the second; the time from the
  stop request to the `done` on the turn's own stream, p50 and p99 (target: p99 under 2 s).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/3 \\
      .venv/bin/python bench/durable.py [--streams 50] [--resumers 200] [--stops 50] [--bursts 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform, percentile  # noqa: E402
from bench.converse import BODY, Sample, measure, through_sse  # noqa: E402
from tests.servers import asgi_server  # noqa: E402


async def open_turn(client: aiohttp.ClientSession, url: str, token: str) -> tuple[aiohttp.ClientResponse, dict[str, str]]:
    """A streamed turn, read up to its `session` event: (the open response, {sessionId, messageId, eventId})."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    response = await client.post(f"{url}/api/chat/converse", json=BODY, headers=headers)
    response.raise_for_status()
    event_id = ""
    async for line in response.content:
        if line.startswith(b"id: "):
            event_id = line[4:].strip().decode()
        if line.startswith(b"data: "):
            data = json.loads(line[6:])
            return response, {"sessionId": data["sessionId"], "messageId": data["messageId"], "eventId": event_id}
    raise RuntimeError("the turn's stream ended before its session event")


async def until_done(response: aiohttp.ClientResponse) -> float:
    """Read a stream to its `done` event; when it came."""
    async for line in response.content:
        if line == b"event: done\n":
            return time.perf_counter()
    raise RuntimeError("stream ended without done")


async def first_replayed(client: aiohttp.ClientSession, url: str, token: str, session: dict[str, str]) -> float:
    """Seconds from a resume request to its first event."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream", "Last-Event-ID": session["eventId"]}
    started = time.perf_counter()
    async with client.get(f"{url}/api/chat/sessions/{session['sessionId']}/stream", headers=headers) as response:
        response.raise_for_status()
        async for line in response.content:
            if line.startswith(b"id: "):
                return time.perf_counter() - started
    raise RuntimeError("resume ended without an event")


def pct(values: list[float], q: float) -> float:
    return percentile(values, q * 100) * 1000


async def keeping(client: aiohttp.ClientSession, on: str, off: str, token: str, streams: int, bursts: int) -> None:
    kept, not_kept = Sample(), Sample()
    for url, into in ((on, kept), (off, not_kept), (off, not_kept), (on, kept)):
        sample = await measure(lambda url=url: through_sse(client, url, token), streams, 0, bursts)
        into.ttft += sample.ttft
        into.errors += sample.errors
        await asyncio.sleep(1.0)
    on50, off50 = kept.p(kept.ttft, 0.5), not_kept.p(not_kept.ttft, 0.5)
    print(f"keeping events, {streams} streams: TTFT p50 {on50:.0f} ms kept, {off50:.0f} ms not kept: {on50 / off50:.3f}x", end="")
    print(f" (errors {kept.errors + not_kept.errors}; target <= 1.03x)")


async def resuming(client: aiohttp.ClientSession, first: str, second: str, token: str, count: int) -> None:
    turns = await asyncio.gather(*(open_turn(client, first, token) for _ in range(count)))
    await asyncio.sleep(1.5)  # the answers are streaming: each resumer has events to replay at once
    waits = await asyncio.gather(*(first_replayed(client, second, token, session) for _, session in turns), return_exceptions=True)
    times = [wait for wait in waits if isinstance(wait, float)]
    failures = [repr(wait) for wait in waits if not isinstance(wait, float)]
    if failures:
        print("  first failure:", failures[0])
    await asyncio.gather(*(until_done(response) for response, _ in turns), return_exceptions=True)
    for response, _ in turns:
        response.release()
    p50, p99 = pct(times, 0.5), pct(times, 0.99)
    print(f"resume, {count:>3} readers on the other process: first event p50 {p50:.1f} ms, p99 {p99:.1f} ms", end="")
    print(f" (errors {count - len(times)}; target p50 < 50 ms at 200)")


async def stopping(client: aiohttp.ClientSession, first: str, second: str, token: str, count: int) -> None:
    turns = await asyncio.gather(*(open_turn(client, first, token) for _ in range(count)))
    await asyncio.sleep(0.5)  # the answers are streaming

    async def stop(response: aiohttp.ClientResponse, session: dict[str, str]) -> float:
        done = asyncio.ensure_future(until_done(response))
        asked = time.perf_counter()
        headers = {"Authorization": f"Bearer {token}"}
        async with client.post(f"{second}/api/chat/sessions/{session['sessionId']}/stop", json={}, headers=headers) as answer:
            assert (await answer.json())["stopped"] is True
        return await done - asked

    times = [wait for wait in await asyncio.gather(*(stop(*turn) for turn in turns), return_exceptions=True) if isinstance(wait, float)]
    for response, _ in turns:
        response.release()
    print(f"stop, {count:>3} turns of the other process: done after p50 {pct(times, 0.5):.0f} ms, p99 {pct(times, 0.99):.0f} ms", end="")
    print(f" (errors {count - len(times)}; target p99 < 2000 ms)")


async def run(first: str, second: str, kept_off: str, token: str, args: argparse.Namespace) -> None:
    connector = aiohttp.TCPConnector(limit=2 * max(args.streams, args.resumers, args.stops) + 10)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as client:
        await measure(lambda: through_sse(client, first, token), 1, 3)  # warm up: imports, connections
        await measure(lambda: through_sse(client, kept_off, token), 1, 3)
        await keeping(client, first, kept_off, token, args.streams, args.bursts)
        for count in (1, args.resumers):
            await resuming(client, first, second, token, count)
        for count in (1, args.stops):
            await stopping(client, first, second, token, count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=50)
    parser.add_argument("--resumers", type=int, default=200)
    parser.add_argument("--stops", type=int, default=50)
    parser.add_argument("--bursts", type=int, default=2)
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL"):
        raise SystemExit("set REDIS_URL (and DATABASE_URL for PostgreSQL): two processes share the events through Redis")

    # Long answers (200 tokens at 20 ms), so that resumers and stops meet running turns.
    with bench_platform(["--tokens", "200", "--first-token-delay", "0.3", "--token-delay", "0.02"]) as (env, token, admin):
        backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
        print(f"durable turns: two processes, {backend}, Redis; model: 300 ms to first token, 200 tokens at 20 ms")
        with (
            asgi_server(env) as first,
            asgi_server(env) as second,
            asgi_server({**env, "CHAT_STREAM_REPLAY_SECONDS": "0"}) as kept_off,
        ):
            agent = {"agentId": "demo-assistant", "foundationModel": "openai:bench", "knowledgeBases": None}
            headers = {"Authorization": f"Bearer {admin}"}
            httpx.post(f"{first.url}/api/chat-admin/agent", json={"agent": agent}, headers=headers).raise_for_status()
            asyncio.run(run(first.url, second.url, kept_off.url, token, args))


if __name__ == "__main__":
    main()
