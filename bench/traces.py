"""bench/traces: what tracing a turn costs (docs/deploy.md, "Traces").

Two platform processes on one throwaway database and the scripted model server (bench/converse's
setup): one exporting every turn's trace to a loopback OTLP/HTTP receiver, one without an exporter.
Turns alternate between them, sequentially and then in bursts of `--concurrency` streams; it prints
TTFT p50 of each, their ratio (target ≤ 1.03×) and the server process's CPU per turn.

    .venv/bin/python bench/traces.py [--turns 30] [--concurrency 50] [--bursts 2]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform  # noqa: E402
from bench.converse import Sample, cpu_seconds, measure, through_sse  # noqa: E402
from tests.peers.otlp_receiver import OtlpReceiver  # noqa: E402
from tests.servers import ServerProcess, asgi_server  # noqa: E402


async def compare(servers: dict[str, ServerProcess], token: str, levels: list[int], turns: int, bursts: int) -> None:
    connector = aiohttp.TCPConnector(limit=max(levels) + 10)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=300)) as client:
        for server in servers.values():
            await measure(lambda server=server: through_sse(client, server.url, token), 1, 3)  # warm up
        for level in levels:
            samples: dict[str, Sample] = {name: Sample() for name in servers}
            cpu: dict[str, float] = dict.fromkeys(servers, 0.0)
            # Alternate in rounds, so the machine's drift falls on both alike.
            rounds = turns if level == 1 else bursts
            for _ in range(rounds):
                for name, server in servers.items():
                    before = cpu_seconds(server.pid)
                    sample = await measure(lambda server=server: through_sse(client, server.url, token), level, 1)
                    cpu[name] += cpu_seconds(server.pid) - before
                    samples[name].ttft += sample.ttft
                    samples[name].errors += sample.errors
            p50 = {name: statistics.median(sample.ttft) * 1000 for name, sample in samples.items()}
            label = "sequential" if level == 1 else f"{level} streams"
            print(
                f"{label:>12}: TTFT p50 traced {p50['traced']:.1f} ms, untraced {p50['untraced']:.1f} ms, "
                f"ratio {p50['traced'] / p50['untraced']:.3f}; CPU per turn traced "
                f"{cpu['traced'] / len(samples['traced'].ttft) * 1000:.1f} ms, untraced "
                f"{cpu['untraced'] / len(samples['untraced'].ttft) * 1000:.1f} ms; "
                f"errors {samples['traced'].errors + samples['untraced'].errors}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30, help="sequential turns per server")
    parser.add_argument("--concurrency", default="50", help="comma-separated concurrent stream counts")
    parser.add_argument("--bursts", type=int, default=2)
    args = parser.parse_args()
    levels = [1, *(int(level) for level in args.concurrency.split(",") if level)]
    model_args = ["--tokens", "50", "--first-token-delay", "0.3", "--token-delay", "0.02"]
    with OtlpReceiver() as receiver, bench_platform(model_args) as (env, token, admin):
        traced_env = {**env, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url}
        with asgi_server(traced_env) as traced, asgi_server(env) as untraced:
            agent = {"agentId": "demo-assistant", "foundationModel": "openai:bench", "knowledgeBases": None}
            httpx.post(f"{traced.url}/api/chat-admin/agent", json={"agent": agent}, headers={"Authorization": f"Bearer {admin}"})
            print(f"traces: {args.turns} sequential turns per server, then {levels[1:]} streams x {args.bursts} bursts")
            asyncio.run(compare({"traced": traced, "untraced": untraced}, token, levels, args.turns, args.bursts))
        print(f"spans received: {len(receiver.spans)}")


if __name__ == "__main__":
    main()
