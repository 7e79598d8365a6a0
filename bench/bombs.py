"""bench/bombs: what a hostile upload or stored object costs everyone else (docs/deploy.md, "Limits on hostile input").

One platform server (uvicorn, one worker; PostgreSQL + Redis when DATABASE_URL / REDIS_URL are
set, on a throwaway database) and the scripted model server of bench/converse.py (300 ms to the
first token, then 50 tokens at 20 ms). In one run, the time to first token of 50 concurrent
streamed turns of 50 other users (`--bursts` bursts a second apart, pooled):

- with nothing else going on (the baseline),
- while an admin uploads the PDF bomb: one page whose content stream inflates to `--pdf-mb` MB of
  text (a few hundred KB of file; pypdf needs minutes for it), parsed in its child process until
  CHAT_KB_PARSE_SECONDS (`--parse-seconds`) ends it,
- while three users keep fetching the gzip bomb, ten times a second each: a web component stored
  with `encoding: gzip` that inflates to 1 GB (about 1 MB stored).

It prints p50/p99 and each row's p50 against the baseline's (target ≤ 1.2), the bomb's outcome,
and the server's peak resident memory (VmHWM) above what it held before the bombs, with the peak of
its child processes (the parse) beside it.

    .venv/bin/python bench/bombs.py [--bursts 3] [--pdf-mb 40] [--parse-seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import bench_platform, manage  # noqa: E402
from bench.converse import BODY, Sample, measure, through_sse  # noqa: E402
from tests.bombs import GIGABYTE, gzip_bomb, rss  # noqa: E402
from tests.knowledge.pdf import pdf_bomb  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

STREAMS = 50


def children_rss(pid: int) -> int:
    """Resident bytes of a process's children now (the parse's child process, started by one of its threads)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children += (task / "children").read_text().split()
        except OSError:
            pass  # the thread ended meanwhile
    total = 0
    for child in children:
        try:
            total += rss(int(child))
        except (OSError, AttributeError):
            pass  # it ended meanwhile
    return total


async def sample_children(pid: int, peak: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], children_rss(pid))
        await asyncio.sleep(0.05)


async def turns(client: aiohttp.ClientSession, url: str, tokens: list[str], bursts: int) -> Sample:
    return await measure(lambda: through_sse(client, url, random.choice(tokens), {**BODY}), STREAMS, 1, bursts)


async def run(url: str, pid: int, tokens: list[str], admin: str, bursts: int, pdf_mb: int) -> None:
    connector = aiohttp.TCPConnector(limit=STREAMS + 20)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as client:
        await measure(lambda: through_sse(client, url, tokens[0]), 1, 3)  # warm up: imports, connections
        await turns(client, url, tokens, 1)  # and every user's first turn, which creates the user
        await asyncio.sleep(1.0)
        base_rss = rss(pid)
        rows: list[tuple[str, Sample, str]] = [("baseline", await turns(client, url, tokens, bursts), "")]
        await asyncio.sleep(1.0)

        # The PDF bomb: one upload, running through the whole measurement.
        bomb = pdf_bomb(pdf_mb)
        form = aiohttp.FormData()
        form.add_field("file", bomb, filename="bomb.pdf", content_type="application/pdf")
        headers = {"Authorization": f"Bearer {admin}"}
        peak_children, stop = [0], asyncio.Event()
        sampler = asyncio.create_task(sample_children(pid, peak_children, stop))
        started = time.perf_counter()
        upload = asyncio.create_task(client.post(f"{url}/api/chat-admin/knowledge-base/bench-kb/documents", data=form, headers=headers))
        await asyncio.sleep(0.5)  # its child is parsing by now
        sample = await turns(client, url, tokens, bursts)
        answer = await (await upload).json()
        stop.set()
        await sampler
        document = answer.get("document") or {}
        outcome = (
            f"{len(bomb) // 1024} KB PDF: {document.get('status')} after {time.perf_counter() - started:.1f} s ({document.get('error')})"
        )
        rows.append(("pdf bomb", sample, outcome))
        await asyncio.sleep(1.0)

        # The gzip bomb: three users fetching it for as long as the turns run.
        done = asyncio.Event()
        fetched: list[int] = []

        async def fetcher(user: int) -> None:
            while not done.is_set():
                async with client.get(f"{url}/api/chat/webcomponent/bench/bomb", headers={"Authorization": f"Bearer {tokens[user]}"}) as r:
                    await r.read()
                    fetched.append(r.status)
                await asyncio.sleep(0.1)  # ten a second per user: six times what the Chat API's rate limit lets through

        fetchers = [asyncio.create_task(fetcher(user)) for user in range(3)]
        sample = await turns(client, url, tokens, bursts)
        done.set()
        await asyncio.gather(*fetchers)
        statuses = sorted(set(fetched))
        rows.append(("gzip bomb", sample, f"{len(fetched)} fetches of the 1 GB component, statuses {statuses}"))

        peak = rss(pid, "VmHWM") - base_rss
        baseline = rows[0][1].p(rows[0][1].ttft, 0.5)
        print(f"{'phase':<10} {'TTFT p50':>9} {'p99':>8} {'x base':>7} {'err':>4}  bomb")
        for name, sample, outcome in rows:
            p50 = sample.p(sample.ttft, 0.5)
            print(f"{name:<10} {p50:7.0f}ms {sample.p(sample.ttft, 0.99):6.0f}ms {p50 / baseline:7.2f} {sample.errors:>4}  {outcome}")
        print(
            f"server peak RSS during the bombs: +{peak / 2**20:.0f} MB over the {base_rss / 2**20:.0f} MB it held before; "
            f"parse child process peak: {peak_children[0] / 2**20:.0f} MB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bursts", type=int, default=3, help="bursts of 50 turns per phase, a second apart, pooled")
    parser.add_argument("--pdf-mb", type=int, default=40, help="MB of text the PDF bomb's page inflates to")
    parser.add_argument("--parse-seconds", type=float, default=20.0, help="CHAT_KB_PARSE_SECONDS of the server")
    args = parser.parse_args()

    model_args = ["--tokens", "50", "--first-token-delay", "0.3", "--token-delay", "0.02"]
    parse = {"CHAT_KB_PARSE_SECONDS": str(args.parse_seconds)}
    with tempfile.TemporaryDirectory() as tmp, bench_platform(model_args, **parse) as (env, _, admin):
        database_url = env["DATABASE_URL"]
        bomb = Path(tmp) / "bomb.js.gz"
        bomb.write_bytes(gzip_bomb(GIGABYTE))
        tokens = [
            word
            for word in manage(
                env,
                "shell",
                "-c",
                "import time; from chatplatform.api.authentication import sign_token; "
                f"print(*(sign_token({{'sub': f'bench-{{n}}', 'exp': int(time.time()) + 3600}}) for n in range({STREAMS})))",
            ).split()
            if word.count(".") == 2  # the shell's own banner is printed too
        ]
        manage(
            env,
            "shell",
            "-c",
            "from django.core.files.base import ContentFile; from django.core.files.storage import storages; "
            f"storages['widget_store'].save('bench/bomb.js.gz', ContentFile(open({str(bomb)!r}, 'rb').read()))",
        )
        backend = "PostgreSQL" if database_url.startswith("postg") else "SQLite"
        print(
            f"bombs: uvicorn 1 worker, {backend}, {'Redis' if env.get('REDIS_URL') else 'local memory'}; "
            f"{STREAMS} concurrent turns × {args.bursts} bursts per phase; CHAT_KB_PARSE_SECONDS={args.parse_seconds:g}"
        )
        with asgi_server(env) as server:
            as_admin = {"Authorization": f"Bearer {admin}"}
            component = {"storeBucket": "bench", "storeKey": "bomb.js.gz", "encoding": "gzip"}
            tag = {
                "scope": "bench", "tag": "bomb", "usageMode": "global", "status": "enabled",
                "widget": {"type": "web-component", "webComponent": component}, "renderingContexts": {"inline": True},
                "canBeGeneratedByLlm": False, "canBeGeneratedByTool": False, "description": "the gzip bomb",
            }  # fmt: skip
            for path, payload in (
                ("agent", {"agent": {"agentId": "demo-assistant", "foundationModel": "openai:bench", "knowledgeBases": None}}),
                ("knowledge-base", {"knowledgeBase": {"knowledgeBaseId": "bench-kb", "name": "Bench", "description": "Uploads."}}),
                ("tagdef", {"tagDefinition": tag}),
            ):
                httpx.post(f"{server.url}/api/chat-admin/{path}", json=payload, headers=as_admin, timeout=60).raise_for_status()
            asyncio.run(run(server.url, server.pid, tokens, admin, args.bursts, args.pdf_mb))


if __name__ == "__main__":
    main()
