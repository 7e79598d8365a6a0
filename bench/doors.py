"""bench/doors: what a protocol door adds to a streamed turn, against converse's SSE (docs/doors.md).

The scripted model server runs as its own process (default: 300 ms to the first token, then 50
tokens at 20 ms each); the platform under the production ASGI server, as bench/converse.py runs
it. For each concurrency level (1 = sequential turns, then `--concurrency`) it measures the time
to the first text and the server's CPU per turn:

- `converse`: `POST /api/chat/converse` with `Accept: text/event-stream`,
- `chat.completions`: `POST /v1/chat/completions` with `stream: true`,
- `responses`: `POST /v1/responses` with `stream: true`,
- `a2a`: `POST /a2a/demo`, A2A's `SendStreamingMessage`,
- `mcp`: `POST /mcp`, a `tools/call` of `ask_demo` with a `progressToken` (the text as progress),
- `ag-ui`: `POST /api/ag-ui/demo` with a `RunAgentInput` (a new thread per run).

    .venv/bin/python bench/doors.py [--turns 20] [--concurrency 50]

Target: each door's TTFT p50 ≤ 1.05× converse's, sequential and at 50 streams.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform  # noqa: E402
from bench.converse import BODY, Sample, cpu_seconds, measure, through_sse  # noqa: E402
from tests.servers import asgi_server  # noqa: E402


async def through_door(
    client: aiohttp.ClientSession, url: str, token: str, path: str, body: dict, first: bytes, last: bytes, headers: dict | None = None
) -> tuple[float, float]:
    """A streamed door request: the time to the line holding `first` (the first text), and to `last`."""
    started = time.perf_counter()
    ttft = None
    async with client.post(f"{url}{path}", json=body, headers={"Authorization": f"Bearer {token}", **(headers or {})}) as response:
        response.raise_for_status()
        async for line in response.content:
            if ttft is None and first in line:
                ttft = time.perf_counter() - started
            if last in line:
                return ttft or float("nan"), time.perf_counter() - started
            if b'"error"' in line and b"response.failed" not in line and b'"error":null' not in line:
                raise RuntimeError(line)
    raise RuntimeError("stream ended before its end")


def ag_ui() -> dict:
    """A run on a new thread: an AG-UI client's first message."""
    message = {"id": "m1", "role": "user", "content": BODY["message"]}
    return {"threadId": str(uuid.uuid4()), "runId": str(uuid.uuid4()), "messages": [message]}


async def run(url: str, pid: int, token: str, levels: list[int], turns: int) -> None:
    completions = {"model": "demo", "stream": True, "messages": [{"role": "user", "content": BODY["message"]}]}
    responses = {"model": "demo", "stream": True, "input": BODY["message"]}
    message = {"messageId": "bench", "role": "ROLE_USER", "parts": [{"text": BODY["message"]}]}
    a2a = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {"message": message}}
    arguments = {"name": "ask_demo", "arguments": {"message": BODY["message"]}, "_meta": {"progressToken": 1}}
    mcp_call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": arguments}
    # A stateless server answers a call without the initialize handshake; as an SDK client, it accepts SSE.
    mcp_headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    connector = aiohttp.TCPConnector(limit=max(levels) + 10)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as client:
        paths = {
            "converse": lambda: through_sse(client, url, token),
            # The first chunk carries the role (and an empty content); the first text is the first delta of content alone.
            "chat.completions": lambda: through_door(
                client, url, token, "/v1/chat/completions", completions, b'"delta":{"content":"', b"[DONE]"
            ),
            "responses": lambda: through_door(client, url, token, "/v1/responses", responses, b"output_text.delta", b"response.completed"),
            # The first event is the task; the first text is the first artifact update.
            "a2a": lambda: through_door(client, url, token, "/a2a/demo", a2a, b'"artifactUpdate"', b"TASK_STATE_COMPLETED"),
            "mcp": lambda: through_door(client, url, token, "/mcp", mcp_call, b"notifications/progress", b'"result"', mcp_headers),
            "ag-ui": lambda: through_door(client, url, token, "/api/ag-ui/demo", ag_ui(), b"TEXT_MESSAGE_CONTENT", b"RUN_FINISHED"),
        }
        for call in paths.values():
            await measure(call, 1, 3)  # warm up: imports, connections
        print(f"{'streams':>7} {'path':<17} {'TTFT p50':>9} {'p99':>8} {'total p50':>10} {'TTFT x':>7} {'err':>4} {'CPU/turn':>9}")
        for level in levels:
            # Each path twice, in one order then the other (A B C C B A), pooled: no path always runs first.
            samples: dict[str, Sample] = {name: Sample() for name in paths}
            cpu: dict[str, float] = dict.fromkeys(paths, 0.0)
            for name in [*paths, *reversed(paths)]:
                cpu_before = cpu_seconds(pid)
                sample = await measure(paths[name], level, turns)
                cpu[name] += cpu_seconds(pid) - cpu_before
                pooled = samples[name]
                pooled.ttft += sample.ttft
                pooled.total += sample.total
                pooled.errors += sample.errors
                await asyncio.sleep(1.0)  # titles and other after-turn work finish before the next path
            rows = [(name, sample, cpu[name] / (len(sample.total) or 1) * 1000) for name, sample in samples.items()]
            base = rows[0][1].p(rows[0][1].ttft, 0.5)
            for name, sample, cpu in rows:
                ttft50 = sample.p(sample.ttft, 0.5)
                print(
                    f"{level:>7} {name:<17} {ttft50:7.0f}ms {sample.p(sample.ttft, 0.99):6.0f}ms {sample.p(sample.total, 0.5):8.0f}ms "
                    f"{ttft50 / base:7.2f} {sample.errors:>4} {cpu:6.1f} ms"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="sequential turns per path")
    parser.add_argument("--concurrency", default="50", help="comma-separated concurrent stream counts")
    args = parser.parse_args()
    levels = [1, *(int(level) for level in args.concurrency.split(",") if level)]

    model = ["--tokens", "50", "--first-token-delay", "0.3", "--token-delay", "0.02"]
    with bench_platform(model, CHAT_SITE_FEATURES="{}") as (env, token, admin):
        backend = "PostgreSQL" if env["DATABASE_URL"].startswith("postg") else "SQLite"
        cache = "Redis" if env.get("REDIS_URL") else "local memory"
        print(f"doors: uvicorn 1 worker, {backend}, {cache}; model: 300 ms to first token, 50 tokens at 20 ms; ", end="")
        print(f"{args.turns} sequential turns, then {levels[1:]} streams")
        with asgi_server(env) as server:
            agent = {"agentId": "demo-assistant", "foundationModel": "openai:bench", "knowledgeBases": None}
            as_admin = {"Authorization": f"Bearer {admin}"}
            httpx.post(f"{server.url}/api/chat-admin/agent", json={"agent": agent}, headers=as_admin).raise_for_status()
            asyncio.run(run(server.url, server.pid, token, levels, args.turns))


if __name__ == "__main__":
    main()
