"""bench/tools: what running a tool through the platform's toolset costs per call.

Two figures, in one run:

- inline: `spec.call(...)` of an inline JavaScript tool (argument check, event, a fresh QuickJS
  context on the worker pool, JSON out, size check, trace). Target: p50 under 2 ms.
- mcp: the same `add` call on an MCP server (`python -m tests.peers.mcp_server` in its own process, bearer
  check on, token endpoint on loopback) through the toolset, against the official `mcp` client
  calling it directly on one warm session with the same token. Calls alternate between the two
  so both see the same machine. Target: ratio of p50s at most 1.2, with a warm token.

    .venv/bin/python bench/tools.py [--calls 2000] [--mcp-calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench.common import percentile  # noqa: E402
from tools.models import ExecutionType, ToolDefinition  # noqa: E402
from tools.toolset import build_toolset  # noqa: E402

USER = {"userId": "bench", "userType": "internal-user", "roles": [], "customData": {}}
EVENT = {"userId": "bench", "sessionId": "bench-session", "chatAppId": "bench", "agentId": "bench", "customData": {}, "timezone": "UTC"}
ADD = {
    "name": "add",
    "description": "Adds two numbers",
    "parameters": {
        "a": {"description": "First", "type": "number", "required": True},
        "b": {"description": "Second", "type": "number", "required": True},
    },
}


def figures(samples: list[float]) -> str:
    return f"p50 {percentile(samples, 50) * 1000:7.3f} ms   p99 {percentile(samples, 99) * 1000:7.3f} ms   (n={len(samples)})"


def tool(execution_type: str, **fields: Any) -> ToolDefinition:
    # Unsaved: build_toolset reads only the fields, so the benchmark needs no database.
    return ToolDefinition(
        tool_id=f"bench-{execution_type}@1",
        execution_type=execution_type,
        name=f"bench-{execution_type}",
        description="bench",
        execution_timeout=10,
        function_schema=[ADD],
        created_by="bench",
        last_modified_by="bench",
        **fields,
    )


def spec_of(definition: ToolDefinition) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    toolset = build_toolset({definition.tool_id: definition}, [definition.tool_id], user=USER, event_base=EVENT)
    return toolset.specs[0].call


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def bench_inline(calls: int) -> list[float]:
    call = spec_of(tool(ExecutionType.INLINE, code="(event, params) => ({ sum: params.a + params.b })"))
    assert await call({"a": 1, "b": 2}) == {"sum": 3}
    for _ in range(200):  # warm-up: worker threads, caches
        await call({"a": 1, "b": 2})
    return [await timed(lambda: call({"a": 1, "b": 2})) for _ in range(calls)]


async def bench_mcp(peer: dict[str, str], calls: int) -> tuple[list[float], list[float]]:
    auth = {"clientId": peer["clientId"], "clientSecret": peer["clientSecret"], "tokenUrl": peer["tokenUrl"]}
    call = spec_of(tool(ExecutionType.MCP, url=peer["url"], auth=auth))
    assert await call({"a": 1, "b": 2}) == {"result": 3.0}  # fetches the token, negotiates the version
    async with httpx2.AsyncClient() as http:
        token = (
            await http.post(
                peer["tokenUrl"],
                data={"grant_type": "client_credentials", "client_id": peer["clientId"], "client_secret": peer["clientSecret"]},
            )
        ).json()["access_token"]
    direct_http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    toolset_samples: list[float] = []
    direct_samples: list[float] = []
    async with Client(streamable_http_client(peer["url"], http_client=direct_http)) as direct:
        for _ in range(100):  # warm-up of both paths
            await direct.call_tool("add", {"a": 1, "b": 2})
            await call({"a": 1, "b": 2})
        for _ in range(calls):
            direct_samples.append(await timed(lambda: direct.call_tool("add", {"a": 1, "b": 2})))
            toolset_samples.append(await timed(lambda: call({"a": 1, "b": 2})))
    await direct_http.aclose()
    return toolset_samples, direct_samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000, help="inline calls measured")
    parser.add_argument("--mcp-calls", type=int, default=1000, help="MCP calls measured on each path")
    options = parser.parse_args()

    inline = asyncio.run(bench_inline(options.calls))
    print(f"inline tool, toolset call (fresh context)   {figures(inline)}   target p50 < 2 ms")

    server = subprocess.Popen(
        [sys.executable, "-m", "tests.peers.mcp_server"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the MCP server logs every session at INFO
        text=True,
    )
    try:
        assert server.stdout is not None
        peer = json.loads(server.stdout.readline())
        through_toolset, direct = asyncio.run(bench_mcp(peer, options.mcp_calls))
    finally:
        server.terminate()
        server.wait(timeout=10)
    ratio50 = percentile(through_toolset, 50) / percentile(direct, 50)
    ratio99 = percentile(through_toolset, 99) / percentile(direct, 99)
    print(f"mcp, direct mcp client (warm session)       {figures(direct)}")
    print(f"mcp, toolset call (warm token)              {figures(through_toolset)}")
    print(f"mcp overhead ratio: p50 {ratio50:.2f}   p99 {ratio99:.2f}   target p50 <= 1.2")


if __name__ == "__main__":
    main()
