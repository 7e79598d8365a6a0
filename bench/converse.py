"""bench/converse: what the platform adds to a streamed model answer.

The scripted OpenAI-compatible model server runs as its own process with realistic latency
(default: 300 ms to the first token, then 50 tokens at 20 ms each). The platform runs under the
production ASGI server (uvicorn, one worker or `--workers N`; PostgreSQL + Redis when DATABASE_URL / REDIS_URL are
set, on a throwaway database). For each concurrency level (1 = sequential turns, then the
`--concurrency` levels) the script measures time to first token (TTFT) and total time:

- calling the model server directly (Chat Completions, streamed),
- through `POST /api/chat/converse` with `Accept: text/event-stream`,
- the same, continuing the sessions the row before started (`sse+session`: what a frontend sends
  for every turn after a conversation's first; the turn takes its ticket on the session and reads
  the history),
- through the WebSocket `/ws/chat/converse`.

A level above 1 is a burst: that many turns started at once (`--bursts N`: N bursts a second
apart, their samples pooled). It prints p50/p99, the ratios through/direct, errors, and the
server process's CPU time per streamed turn (from /proc, everything included: auth, database writes, JSON, the model client).
The `relay` row is the floor of this stack: a bare ASGI app on the same uvicorn relaying the
model's stream (bench/relay.py). A VM's CPU accounting per wakeup drifts severalfold with the
host's load, so read the platform's CPU per turn against the relay's of the same run.

    .venv/bin/python bench/converse.py [--turns 20] [--concurrency 50,200,500] [--workers 1] [--bursts 1]

Then the same SSE turns in a chat app with instruction augmentation on (the model server answers
the selection call after the first-token delay): the time added to the first token, against one
selection round trip made straight to the model server.

Targets (docs/decisions.md): sequential TTFT ≤ 1.03× direct and total ≤ 1.02×; TTFT p50 ≤ 1.2× at 50
streams and ≤ 1.5× at 200; 500 streams without error; CPU per streamed turn ≤ 5 ms; with
directives on, at most one selection round trip added.
The load generator runs on the same two cores as the server; it costs them CPU too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform, percentile  # noqa: E402
from bench.profile import Profile  # noqa: E402
from tests.servers import ServerProcess, asgi_server  # noqa: E402

BODY = {"chatAppId": "demo", "agentId": "demo-assistant", "message": "Tell me something.", "features": {}, "source": "user"}


@dataclass
class Sample:
    ttft: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    errors: int = 0

    def p(self, values: list[float], q: float) -> float:
        return percentile(values, q * 100) * 1000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its children (uvicorn's workers), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return own + sum(cpu_seconds(int(child)) for child in children)


async def direct(client: aiohttp.ClientSession, url: str) -> tuple[float, float]:
    """A streamed answer of the model server (`url`: its base URL), or of the relay (`url/chat/completions` is answered there too)."""
    started = time.perf_counter()
    ttft = None
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": BODY["message"]}]}
    async with client.post(f"{url}/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.content:
            if ttft is None and b'"content":"' in line.replace(b" ", b"") and b'"content":""' not in line.replace(b" ", b""):
                ttft = time.perf_counter() - started
            if line.strip() == b"data: [DONE]":
                break
    return ttft or float("nan"), time.perf_counter() - started


async def through_sse(
    client: aiohttp.ClientSession, url: str, token: str, body: dict = BODY, sessions: list[str] | None = None
) -> tuple[float, float]:
    """A streamed turn; the id of the session it ran on is added to `sessions` (when given)."""
    started = time.perf_counter()
    ttft = None
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    async with client.post(f"{url}/api/chat/converse", json=body, headers=headers) as response:
        response.raise_for_status()
        previous = b""
        async for line in response.content:
            if previous == b"event: session\n" and sessions is not None:
                sessions.append(json.loads(line.removeprefix(b"data: "))["sessionId"])
            previous = line
            if ttft is None and line == b"event: delta\n":
                ttft = time.perf_counter() - started
            if line == b"event: done\n":
                return ttft or float("nan"), time.perf_counter() - started
            if line == b"event: error\n":
                raise RuntimeError("error event")
    raise RuntimeError("stream ended without done")


async def selection_round_trip(client: aiohttp.ClientSession, model_url: str) -> tuple[float, float]:
    """One non-streamed request straight to the model server: what a directive selection call costs at best."""
    started = time.perf_counter()
    body = {"model": "bench", "messages": [{"role": "user", "content": "Which directives apply?"}]}
    async with client.post(f"{model_url}/chat/completions", json=body) as response:
        response.raise_for_status()
        await response.read()
    elapsed = time.perf_counter() - started
    return elapsed, elapsed


async def through_websocket(url: str, token: str) -> tuple[float, float]:
    ws_url = url.replace("http://", "ws://") + f"/ws/chat/converse?token={token}"
    async with websockets.connect(ws_url, open_timeout=60) as socket:
        started = time.perf_counter()
        ttft = None
        await socket.send(json.dumps(BODY))
        while True:
            event = json.loads(await socket.recv())
            if ttft is None and event["type"] == "delta":
                ttft = time.perf_counter() - started
            if event["type"] == "done":
                return ttft or float("nan"), time.perf_counter() - started
            if event["type"] == "error":
                raise RuntimeError(event)


async def measure(call: Callable[[], Awaitable[tuple[float, float]]], concurrency: int, turns: int, bursts: int = 1) -> Sample:
    """`turns` calls one after another (concurrency 1), or `bursts` times `concurrency` calls at once,
    a second apart; the samples of every call pooled."""
    sample = Sample()

    async def one() -> None:
        try:
            ttft, total = await call()
            sample.ttft.append(ttft)
            sample.total.append(total)
        except Exception:
            sample.errors += 1

    if concurrency == 1:
        for _ in range(turns):
            await one()
    else:
        for burst in range(bursts):
            if burst:
                await asyncio.sleep(1.0)
            await asyncio.gather(*(one() for _ in range(concurrency)))
    return sample


async def run(
    url: str,
    pid: int,
    model_url: str,
    relay: ServerProcess,
    token: str,
    levels: list[int],
    turns: int,
    bursts: int,
    profile: Profile | None,
    skip_directives: bool = False,
    profile_output: str | None = None,
) -> None:
    # aiohttp reads a stream for a third of httpx's CPU: the load generator shares the cores with the server.
    connector = aiohttp.TCPConnector(limit=max(levels) + 10)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as client:
        await measure(lambda: through_sse(client, url, token), 1, 3)  # warm up: imports, connections
        await measure(lambda: through_websocket(url, token), 1, 3)
        head = f"{'streams':>7} {'path':<11} {'TTFT p50':>9} {'p99':>8} {'total p50':>10} {'p99':>8}"
        print(f"{head} {'TTFT x':>7} {'total x':>8} {'err':>4} {'CPU/turn':>9}")
        for level in levels:
            base = await measure(lambda: direct(client, model_url), level, turns, bursts)
            rows = [("direct", base, None)]
            sessions: list[str] = []  # those the `sse` row starts, each continued once by `sse+session`
            paths = (
                ("relay", relay.pid, lambda: direct(client, relay.url)),
                ("sse", pid, lambda sessions=sessions: through_sse(client, url, token, sessions=sessions)),
                ("sse+session", pid, lambda sessions=sessions: through_sse(client, url, token, {**BODY, "sessionId": sessions.pop()})),
                ("websocket", pid, lambda: through_websocket(url, token)),
            )
            for name, server_pid, call in paths:
                cpu_before = cpu_seconds(server_pid)
                if profile and name in ("sse", "sse+session"):
                    with profile:
                        sample = await measure(call, level, turns, bursts)
                else:
                    sample = await measure(call, level, turns, bursts)
                done = len(sample.total) or 1
                rows.append((name, sample, (cpu_seconds(server_pid) - cpu_before) / done * 1000))
                await asyncio.sleep(1.0)  # let titles and other after-turn work finish before the next phase
            for name, sample, cpu in rows:
                ttft50, total50 = sample.p(sample.ttft, 0.5), sample.p(sample.total, 0.5)
                ratio_ttft = ttft50 / base.p(base.ttft, 0.5)
                ratio_total = total50 / base.p(base.total, 0.5)
                cpu_text = f"{cpu:7.1f} ms" if cpu is not None else ""
                print(
                    f"{level:>7} {name:<11} {ttft50:7.0f}ms {sample.p(sample.ttft, 0.99):6.0f}ms {total50:8.0f}ms "
                    f"{sample.p(sample.total, 0.99):6.0f}ms {ratio_ttft:7.2f} {ratio_total:8.2f} {sample.errors:>4} {cpu_text:>9}"
                )
        if profile:
            print("\nthe sse and sse+session rows' turns, all levels (py-spy ran beside them: their figures above include its load)")
            profile.report()
            if profile_output:
                profile.save(profile_output)
        if not skip_directives:
            await directives_on(client, url, model_url, token, levels[:2], turns, bursts)


async def directives_on(
    client: aiohttp.ClientSession, url: str, model_url: str, token: str, levels: list[int], turns: int, bursts: int
) -> None:
    """The same SSE turns in a chat app with instruction augmentation on: one selection call before the answer.
    Target: the time added to the first token is at most one selection round trip."""
    print("\ndirectives on (chat app bench-directives: 2 candidate directives, the selection model picks one):")
    print(f"{'streams':>7} {'selection':>10} {'TTFT off':>9} {'TTFT on':>8} {'added':>7} {'added/selection':>16} {'err':>4}")
    with_directives = {**BODY, "chatAppId": "bench-directives"}
    for level in levels:
        selection = await measure(lambda: selection_round_trip(client, model_url), level, turns, bursts)
        off = await measure(lambda: through_sse(client, url, token), level, turns, bursts)
        on = await measure(lambda: through_sse(client, url, token, with_directives), level, turns, bursts)
        await asyncio.sleep(1.0)
        round_trip, ttft_off, ttft_on = selection.p(selection.total, 0.5), off.p(off.ttft, 0.5), on.p(on.ttft, 0.5)
        added = ttft_on - ttft_off
        print(
            f"{level:>7} {round_trip:8.0f}ms {ttft_off:7.0f}ms {ttft_on:6.0f}ms {added:5.0f}ms {added / round_trip:16.2f} "
            f"{off.errors + on.errors:>4}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="sequential turns per path")
    parser.add_argument("--concurrency", default="50,200,500", help="comma-separated concurrent stream counts")
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--first-token-delay", type=float, default=0.3)
    parser.add_argument("--token-delay", type=float, default=0.02)
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--bursts", type=int, default=1, help="bursts per concurrency level, pooled (steadier figures on a noisy machine)")
    parser.add_argument(
        "--profile", action="store_true", help="sample the server with py-spy during the streamed (SSE) turns; print where the CPU went"
    )
    parser.add_argument("--profile-output", help="with --profile: also write the samples there as collapsed stacks (for a flame graph)")
    parser.add_argument("--no-directives", action="store_true", help="skip the directives-on rows")
    args = parser.parse_args()
    levels = [1, *(int(level) for level in args.concurrency.split(",") if level)]

    with bench_platform(
        [
            "--tokens",
            str(args.tokens),
            "--first-token-delay",
            str(args.first_token_delay),
            "--token-delay",
            str(args.token_delay),
            "--complete-text",
            '<answer>["metric-units"]</answer>',
            "--complete-delay",
            str(args.first_token_delay),
        ],
        # Directives are processed where a chat app keeps augmentation on (only bench-directives, below).
        CHAT_SITE_FEATURES=json.dumps({"instructionAugmentation": {"enabled": True}}),
        CHAT_SELECTION_MODEL="openai:bench",
    ) as (env, token, admin):
        model_url = env["OPENAI_BASE_URL"]
        backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
        cache = "Redis" if env.get("REDIS_URL") else "local memory"
        print(f"converse: uvicorn {args.workers} worker(s), {backend}, {cache}; ", end="")
        print(
            f"model: {args.first_token_delay * 1000:.0f} ms to first token, {args.tokens} tokens at {args.token_delay * 1000:.0f} ms; ",
            end="",
        )
        print(f"{args.turns} sequential turns, then {levels[1:]} streams")
        print(
            "relay: a bare ASGI app on the same uvicorn relaying the model stream (bench/relay.py), "
            "the floor of this stack on this machine now"
        )
        with (
            asgi_server({**env, "MODEL_URL": model_url}, app="bench.relay:app") as relay,
            asgi_server(env, workers=args.workers) as server,
        ):
            as_admin = {"Authorization": f"Bearer {admin}"}
            # The demo agent as it was measured before knowledge bases came (bench/knowledge.py measures a turn with one).
            agent = {"agentId": "demo-assistant", "foundationModel": "openai:bench", "knowledgeBases": None}
            off = {"agentId": "demo-assistant", "features": {"instructionAugmentation": {"enabled": False}}}
            on = {"agentId": "demo-assistant", "features": {"instructionAugmentation": {"enabled": True}}}
            for path, payload in (
                ("agent", {"agent": agent}),
                ("chat-app", {"chatApp": {"chatAppId": "demo", **off}}),
                ("chat-app", {"chatApp": {"chatAppId": "bench-directives", "title": "Bench", "enabled": True, **on}}),
            ):
                httpx.post(f"{server.url}/api/chat-admin/{path}", json=payload, headers=as_admin).raise_for_status()
            profile = Profile(server.pid) if args.profile else None
            asyncio.run(
                run(
                    server.url,
                    server.pid,
                    model_url,
                    relay,
                    token,
                    levels,
                    args.turns,
                    args.bursts,
                    profile,
                    args.no_directives,
                    args.profile_output,
                )
            )


if __name__ == "__main__":
    main()
