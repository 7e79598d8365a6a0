"""bench/page: the chat page in Chromium (Playwright, Debian's chromium), against the platform under uvicorn.

It prints, for one run on this machine now:

1. From pressing Send to the first token painted (marks bench/page_probes.js puts in the page from
   outside: `chat:send` when the message leaves, `chat:first-token` in the task after the frame
   that painted it), against the
   time to the first `delta` of the same turn over SSE from a plain HTTP client, turns taken
   alternately. p50 over `--turns` (target: page ≤ 1.1× SSE).
2. A 2,000-token Markdown answer streamed at 5 ms a token: the longest main-thread task while it
   streams (Chromium's trace, RunTask on the page's renderer main thread; target < 50 ms), the
   number of long animation frames, and the time from `done` to the final paint.
3. Page weight of /chat/<app>/ (bytes on the wire, every request until the page is ready and the
   network is idle): a first visit (empty cache) and a repeat visit, with the assets collected
   (`collectstatic`: hashed, compressed names, as a deployment serves them; target ≤ 150 KB
   first visit) and uncollected (`make run`, a checkout).

The model is the scripted OpenAI-compatible server of the tests, in this process. The machine's
two cores are shared by the server, Chromium, and this script (and other tenants): read the
figures as this run's, and compare within a run.

    .venv/bin/python bench/page.py [--turns 30] [--first-token-delay 0.2] [--long-tokens 2000] [--long-token-delay 0.005]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import manage, percentile, throwaway_database  # noqa: E402
from tests.peers.openai_server import OpenAIServer, Reply  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
# The page's timing marks, injected before its own scripts: the page carries no probe of its own.
PROBES = Path(__file__).resolve().parent / "page_probes.js"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel", "v8", "disabled-by-default-v8.gc"]


def long_answer(tokens: int) -> list[str]:
    """A Markdown answer of `tokens` chunks: headings, paragraphs, lists, a table, code."""
    chunks: list[str] = []
    section = 0
    while len(chunks) < tokens:
        section += 1
        chunks += [f"## Part {section}\n\n"]
        chunks += [f"word{section}x{i} " for i in range(40)] + ["\n\n"]
        chunks += [f"- item {section}.{i} with **bold** text\n" for i in range(5)] + ["\n"]
        chunks += ["| a | b |\n", "|---|---|\n"] + [f"| {section} | {i} |\n" for i in range(4)] + ["\n"]
        chunks += ["```python\n"] + [f"value_{i} = {i} * {section}\n" for i in range(8)] + ["```\n\n"]
    return chunks[:tokens]


def p50(values: list[float]) -> float:
    return percentile(values, 50)


def sse_first_delta(client: httpx.Client, token: str, body: dict[str, Any]) -> tuple[float, str]:
    """Seconds to the first `delta` of a streamed turn over SSE (a kept-alive connection, as the
    page's socket is), and its session."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    started = time.perf_counter()
    first = None
    session = body.get("sessionId")
    with client.stream("POST", "/api/chat/converse", json=body, headers=headers) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("event: delta") and first is None:
                first = time.perf_counter() - started
            elif line.startswith("data: ") and session is None and '"sessionId"' in line:
                session = json.loads(line[6:])["sessionId"]
    assert first is not None, "the turn streamed no delta"
    return first, session


def page_turn(page: Any, text: str) -> tuple[float, int]:
    """Send `text` from the page; ms from send to the first token painted, and the answers so far."""
    answers = page.locator('[data-message-role="assistant"][data-message-id]').count()
    page.get_by_role("textbox").fill(text)
    page.get_by_role("button", name="Send").click()
    page.wait_for_function(f"document.querySelectorAll('[data-message-role=\"assistant\"][data-message-id]').length > {answers}")
    page.wait_for_function("performance.getEntriesByName('chat:first-token').length > 0")
    return page.evaluate("performance.measure('m', 'chat:send', 'chat:first-token').duration"), answers + 1


def weight(browser: Any, url: str, cookies: list[dict[str, Any]]) -> tuple[int, int, int]:
    """Bytes on the wire for a first visit and a repeat visit of `url`, and the requests of the first."""
    context = browser.new_context(bypass_csp=True)
    context.add_cookies(cookies)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    received: list[int] = []
    cdp.on("Network.loadingFinished", lambda event: received.append(int(event["encodedDataLength"])))
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("body[data-ready]")
    first, requests = sum(received), len(received)
    received.clear()
    page.goto(url, wait_until="networkidle")
    page.wait_for_selector("body[data-ready]")
    repeat = sum(received)
    context.close()
    return first, repeat, requests


def longest_task_ms(trace: bytes) -> tuple[float, int]:
    """The longest RunTask on a renderer main thread in a Chromium trace, and how many passed 50 ms."""
    events = json.loads(trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    mains = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"}
    durations = [e["dur"] / 1000 for e in events if e.get("name") == "RunTask" and e.get("ph") == "X" and (e["pid"], e["tid"]) in mains]
    return (max(durations) if durations else float("nan")), sum(1 for d in durations if d >= 50)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--first-token-delay", type=float, default=0.2, help="seconds the model waits before its first token")
    parser.add_argument("--long-tokens", type=int, default=2000)
    parser.add_argument("--long-token-delay", type=float, default=0.005)
    args = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        sys.exit("bench/page needs Chromium: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    model = OpenAIServer()
    short = Reply(text=" ".join(f"token{i}" for i in range(20)), first_token_delay=args.first_token_delay, token_delay=0.01)
    long = Reply(chunks=long_answer(args.long_tokens), first_token_delay=args.first_token_delay, token_delay=args.long_token_delay)
    model.script(lambda body: long if "long answer" in json.dumps(body.get("messages", [])[-1:]) else short)

    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        stack.enter_context(model)
        database_url = stack.enter_context(throwaway_database(os.environ.get("DATABASE_URL"), tmp))
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "DEBUG": "false",
            "SECRET_KEY": "bench-secret-key-" + "x" * 40,
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "unused",
            "CHAT_RATE_LIMITS": json.dumps({"chat": 10**9, "admin": 10**9}),
            "STATIC_ROOT": f"{tmp}/static",
            "LOG_LEVEL": "WARNING",
        }
        manage(env, "migrate", "--noinput")
        manage(env, "seed_demo")
        manage(env, "collectstatic", "--noinput")
        token = manage(env, "issue_token", "bench-user").strip()
        admin = {"Authorization": f"Bearer {manage(env, 'issue_token', 'bench-admin', '--admin').strip()}"}
        server = stack.enter_context(asgi_server(env))
        plain = stack.enter_context(asgi_server({**env, "STATIC_ROOT": f"{tmp}/not-collected"}))
        agent = {"agentId": "bench-agent", "basePrompt": "Answer.", "toolIds": [], "foundationModel": "openai:bench"}
        httpx.post(f"{server.url}/api/chat-admin/agent", json={"agent": agent}, headers=admin).raise_for_status()
        app = {"chatAppId": "bench", "title": "Bench", "agentId": "bench-agent", "features": {"traces": {"enabled": True}}}
        httpx.post(f"{server.url}/api/chat-admin/chat-app", json={"chatApp": app}, headers=admin).raise_for_status()

        backend = "PostgreSQL" if database_url.startswith("postg") else "SQLite"
        print(f"page: uvicorn 1 worker, {backend}, {'Redis' if env.get('REDIS_URL') else 'local memory'}; Chromium headless; ", end="")
        print(f"model: {args.first_token_delay * 1000:.0f} ms to the first token")

        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # The bench's probes (wait_for_function) are evaluated strings, which the page's CSP forbids.
        context = browser.new_context(viewport={"width": 1200, "height": 820}, bypass_csp=True)
        context.add_init_script(path=PROBES)
        context.request.post(f"{server.url}/api/chat/auth/session", headers={"Authorization": f"Bearer {token}"}).dispose()
        page = context.new_page()
        page.goto(f"{server.url}/chat/bench/")
        page.wait_for_selector("body[data-ready]")

        # 1. Send to first token painted, against the SSE TTFT of the same turn.
        page_turn(page, "warm up")
        sse = stack.enter_context(httpx.Client(base_url=server.url, timeout=60))
        _, sse_session = sse_first_delta(
            sse, token, {"chatAppId": "bench", "agentId": "bench-agent", "message": "warm up", "features": {}, "source": "user"}
        )
        painted, streamed = [], []
        for turn in range(args.turns):
            body = {
                "chatAppId": "bench",
                "agentId": "bench-agent",
                "message": f"turn {turn}",
                "features": {},
                "source": "user",
                "sessionId": sse_session,
            }
            if turn % 2:
                streamed.append(sse_first_delta(sse, token, body)[0] * 1000)
                painted.append(page_turn(page, f"turn {turn}")[0])
            else:
                painted.append(page_turn(page, f"turn {turn}")[0])
                streamed.append(sse_first_delta(sse, token, body)[0] * 1000)
        ratio = p50(painted) / p50(streamed)
        print(f"  send → first token painted (WebSocket): p50 {p50(painted):.0f} ms, max {max(painted):.0f} ms over {args.turns} turns")
        print(f"  SSE time to first delta, same turns:     p50 {p50(streamed):.0f} ms, max {max(streamed):.0f} ms")
        print(f"  page / SSE p50: {ratio:.2f}x (target ≤ 1.10x)")

        # 2. A long answer: the longest main-thread task while it streams, and done → final paint.
        page.evaluate(
            "window.__loaf = 0; new PerformanceObserver((list) => { window.__loaf += list.getEntries().length; })"
            ".observe({ type: 'long-animation-frame', buffered: false });"
        )
        browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
        started = time.perf_counter()
        page_turn(page, "Please give me the long answer")
        page.wait_for_function("performance.getEntriesByName('chat:final-paint').length > 0")
        elapsed = time.perf_counter() - started
        trace = browser.stop_tracing()
        if os.environ.get("BENCH_PAGE_TRACE"):  # for a closer look: chrome://tracing or Perfetto opens it
            Path(os.environ["BENCH_PAGE_TRACE"]).write_bytes(trace)
        longest, over_50 = longest_task_ms(trace)
        done_to_paint = page.evaluate("performance.measure('d', 'chat:done', 'chat:final-paint').duration")
        frames = page.evaluate("window.__loaf")
        words = page.locator('[data-message-role="assistant"]').last.text_content().count("word")  # innerText skips blocks out of view
        expected = sum(chunk.startswith("word") for chunk in long_answer(args.long_tokens))
        pace = f"{args.long_token_delay * 1000:.0f} ms a token"
        print(f"  {args.long_tokens}-token answer at {pace} ({elapsed:.1f} s, {words}/{expected} words shown):")
        print(f"    longest main-thread task {longest:.1f} ms (target < 50), tasks ≥ 50 ms: {over_50}, long animation frames: {frames}")
        print(f"    done → final paint {done_to_paint:.1f} ms")
        context.close()

        # 3. Page weight, first and repeat visit.
        for label, base in (("collected (collectstatic: hashed, gzip/brotli)", server.url), ("not collected (make run)", plain.url)):
            signed = browser.new_context()
            signed.request.post(f"{base}/api/chat/auth/session", headers={"Authorization": f"Bearer {token}"}).dispose()
            cookies = signed.cookies()
            signed.close()
            first, repeat, requests = weight(browser, f"{base}/chat/bench/", cookies)
            print(f"  page weight, {label}: first visit {first / 1024:.1f} KB in {requests} requests, repeat visit {repeat / 1024:.1f} KB")
        browser.close()


if __name__ == "__main__":
    main()
