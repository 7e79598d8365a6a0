"""bench/widgets: the widget runtime in Chromium (Playwright, Debian's chromium), against the platform under uvicorn.

It prints, for one run on this machine now:

1. A 2,000-token answer carrying 20 inline widgets (charts, prompts, images and web components
   from the widget store, in turn; each tag split over several deltas), streamed at 5 ms a token:
   - the longest main-thread task while it streams: PerformanceObserver `longtask` entries (only
     tasks of 50 ms or more exist there), and Chromium's trace (every RunTask of the page's
     renderer main thread), target < 50 ms;
   - from the text that completed a widget's tag arriving to the widget's first paint: the
     `widget:paint` measures bench/page_probes.js takes from outside the page (the delta's arrival
     on the socket to the task after the frame that painted the widget's content), p50 / p95 /
     max over the 20 widgets, target p50 < 30 ms.
2. A canvas (a chart) opened and closed 50 times: JS heap, DOM nodes and event listeners
   (CDP Memory.getDOMCounters, after a forced garbage collection) and detached DOM nodes
   (DOM.getDetachedDomNodes), before and after.

The model is the scripted OpenAI-compatible server of the tests, in this process. The machine's
two cores are shared by the server, Chromium, and this script (and other tenants): read the
figures as this run's.

    .venv/bin/python bench/widgets.py [--tokens 2000] [--widgets 20] [--token-delay 0.005] [--canvas-rounds 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import manage, throwaway_database  # noqa: E402
from bench.page import CHROMIUM, CHROMIUM_ARGS, PROBES, TRACE_CATEGORIES, longest_task_ms  # noqa: E402
from tests.peers.openai_server import OpenAIServer, Reply  # noqa: E402
from tests.servers import asgi_server  # noqa: E402

PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
COMPONENT = b"""customElements.define("bench-card", class extends HTMLElement {
  connectedCallback() { this.textContent = "card " + JSON.stringify(this.context.data); }
});"""


def tag(name: str, widget: dict[str, Any], contexts: dict[str, Any]) -> dict[str, Any]:
    return {
        "scope": "bench", "tag": name, "usageMode": "global", "widget": widget, "llmInstructionsMd": f"Write <bench.{name}>.",
        "status": "enabled", "renderingContexts": contexts, "canBeGeneratedByLlm": True, "canBeGeneratedByTool": False,
        "description": name,
    }  # fmt: skip


def widget_tag(index: int) -> str:
    kind = ("chart", "ask", "image", "card")[index % 4]
    if kind == "chart":
        series = [((index * 7 + step * 3) % 11) + 1 for step in range(12)]
        body = json.dumps({"type": "line", "labels": list(range(12)), "series": [{"label": "v", "data": series}]})
        return f'<bench.chart title="Figure {index}">{body}</bench.chart>'
    if kind == "ask":
        return f'<bench.ask text="Tell me more about part {index}"/>'
    if kind == "image":
        return f'<bench.image src="{PIXEL}" alt="pixel {index}"/>'
    return f'<bench.card n="{index}">{{"part": {index}}}</bench.card>'


def answer_chunks(tokens: int, widgets: int) -> list[str]:
    """`tokens` chunks of Markdown with `widgets` tags spread evenly, each tag cut in 6 chunks."""
    chunks: list[str] = []
    every = max(1, tokens // (widgets + 1))
    placed = 0
    while len(chunks) < tokens:
        if len(chunks) and len(chunks) % every == 0 and placed < widgets:
            text = "\n\n" + widget_tag(placed) + "\n\n"
            step = max(1, len(text) // 6)
            chunks += [text[at : at + step] for at in range(0, len(text), step)]
            placed += 1
        elif len(chunks) % 60 == 59:
            chunks.append("\n\n")
        else:
            chunks.append(f"word{len(chunks)} ")
    return chunks


def dom_counters(cdp: Any) -> dict[str, float]:
    cdp.send("HeapProfiler.collectGarbage")
    cdp.send("HeapProfiler.collectGarbage")
    counters = cdp.send("Memory.getDOMCounters")
    heap = cdp.send("Runtime.getHeapUsage")
    try:
        detached = len(cdp.send("DOM.getDetachedDomNodes").get("detachedNodes", []))
    except Exception:  # an older Chromium without the command
        detached = float("nan")
    return {"heap": heap["usedSize"] / 1024, "nodes": counters["nodes"], "listeners": counters["jsEventListeners"], "detached": detached}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--widgets", type=int, default=20)
    parser.add_argument("--token-delay", type=float, default=0.005)
    parser.add_argument("--canvas-rounds", type=int, default=50)
    args = parser.parse_args()
    if not os.path.exists(CHROMIUM):
        sys.exit("bench/widgets needs Chromium: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    model = OpenAIServer()
    chunks = answer_chunks(args.tokens, args.widgets)
    warm = Reply(text="Warming up: " + widget_tag(0) + " " + widget_tag(3) + " done.", token_delay=0.005)
    model.script(
        lambda body: warm if "warm up" in json.dumps(body.get("messages", [])[-1:]) else Reply(chunks=chunks, token_delay=args.token_delay)
    )

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
            "CHAT_SITE_FEATURES": json.dumps({"tags": {"enabled": True}}),
            "STATIC_ROOT": f"{tmp}/static",
            "LOG_LEVEL": "WARNING",
        }
        manage(env, "migrate", "--noinput")
        manage(env, "collectstatic", "--noinput")
        (Path(tmp) / "card.js").write_bytes(COMPONENT)
        manage(env, "store_put", "bench", "card.js.gz", f"{tmp}/card.js", "--encode", "gzip")
        token = manage(env, "issue_token", "bench-user").strip()
        admin = {"Authorization": f"Bearer {manage(env, 'issue_token', 'bench-admin', '--admin').strip()}"}
        server = stack.enter_context(asgi_server(env))
        agent = {"agentId": "bench-agent", "basePrompt": "Answer.", "toolIds": [], "foundationModel": "openai:bench"}
        httpx.post(f"{server.url}/api/chat-admin/agent", json={"agent": agent}, headers=admin).raise_for_status()
        everywhere = {"inline": {"enabled": True}, "canvas": {"enabled": True}}
        card = {"storeBucket": "bench", "storeKey": "card.js.gz", "encoding": "gzip", "customElementName": "bench-card"}
        for definition in (
            tag("chart", {"type": "built-in", "builtInType": "chart"}, everywhere),
            tag("ask", {"type": "built-in", "builtInType": "prompt"}, everywhere),
            tag("image", {"type": "built-in", "builtInType": "image"}, everywhere),
            tag("card", {"type": "web-component", "webComponent": card}, everywhere),
        ):
            httpx.post(f"{server.url}/api/chat-admin/tagdef", json={"tagDefinition": definition}, headers=admin).raise_for_status()
        app = {"chatAppId": "bench", "title": "Bench", "agentId": "bench-agent", "features": {"tags": {"enabled": True}}}
        httpx.post(f"{server.url}/api/chat-admin/chat-app", json={"chatApp": app}, headers=admin).raise_for_status()

        backend = "PostgreSQL" if database_url.startswith("postg") else "SQLite"
        print(f"widgets: uvicorn 1 worker, {backend}; assets collected; Chromium headless")

        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1200, "height": 820}, bypass_csp=True)  # the probes are evaluated strings
        context.add_init_script(path=PROBES)
        context.request.post(f"{server.url}/api/chat/auth/session", headers={"Authorization": f"Bearer {token}"}).dispose()
        page = context.new_page()
        page.goto(f"{server.url}/chat/bench/")
        page.wait_for_selector("body[data-ready]")

        # 1. The long answer with its widgets, after a first turn (the page's first send, the
        #    store's web component fetched once) so the figures are of a page in use.
        page.locator("#prompt").fill("warm up")
        page.get_by_role("button", name="Send").click()
        page.wait_for_selector('[data-message-role="assistant"][data-message-id]', timeout=60000)
        page.wait_for_function("() => performance.getEntriesByName('widget:paint').length >= 2")
        performance_clear = "performance.clearMeasures('widget:paint')"
        page.evaluate(performance_clear)
        page.evaluate(
            "window.__longtasks = [];"
            "new PerformanceObserver((list) => { for (const e of list.getEntries()) window.__longtasks.push(e.duration); })"
            ".observe({ type: 'longtask', buffered: false });"
        )
        browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
        page.locator("#prompt").fill("The long answer, with widgets")
        page.get_by_role("button", name="Send").click()
        page.wait_for_function(
            "() => document.querySelectorAll('[data-message-role=\"assistant\"][data-message-id]').length >= 2", timeout=120000
        )
        page.wait_for_function(f"() => performance.getEntriesByName('widget:paint').length >= {args.widgets}", timeout=30000)
        trace = browser.stop_tracing()
        if os.environ.get("BENCH_WIDGETS_TRACE"):  # for a closer look: Perfetto opens it
            Path(os.environ["BENCH_WIDGETS_TRACE"]).write_bytes(trace)
        longest, over_50 = longest_task_ms(trace)
        longtasks = page.evaluate("window.__longtasks")
        paints = page.evaluate("performance.getEntriesByName('widget:paint').map((e) => e.duration)")
        frames = page.locator('[data-message-role="assistant"]').last.locator(".widget-frame").count()
        paints.sort()
        pace = f"{args.token_delay * 1000:.0f} ms a token"
        print(f"  {args.tokens}-token answer with {args.widgets} inline widgets at {pace} ({frames} widgets shown):")
        observed = f"{max(longtasks):.0f} ms longest of {len(longtasks)}" if longtasks else "none (every task < 50 ms)"
        print(
            f"    longest main-thread task (trace) {longest:.1f} ms (target < 50), tasks ≥ 50 ms: {over_50}; longtask entries: {observed}"
        )
        p95 = paints[min(len(paints) - 1, int(len(paints) * 0.95))]
        print(
            f"    closing tag → widget's first paint: p50 {statistics.median(paints):.1f} ms (target < 30), "
            f"p95 {p95:.1f} ms, max {paints[-1]:.1f} ms"
        )

        # 2. A canvas opened and closed many times: nothing left behind.
        page.get_by_role("button", name="New chat").click()
        cdp = context.new_cdp_session(page)
        cdp.send("HeapProfiler.enable")
        data = {"labels": list(range(24)), "series": [{"label": "v", "data": [i % 7 for i in range(24)]}]}
        open_close = """async (data) => {
            window.chatRuntime.renderTag('bench.chart', 'canvas', {companionMode: true, data});
            await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
            if (!document.querySelector('.canvas-panel .widget-chart canvas')) {
              await new Promise((resolve) => setTimeout(resolve, 50));
            }
            return window.chatRuntime.requestCanvasClose();
        }"""
        assert page.evaluate(open_close, data) is True  # a first round loads the chart library
        before = dom_counters(cdp)
        for _ in range(args.canvas_rounds):
            assert page.evaluate(open_close, data) is True
        after = dom_counters(cdp)
        print(f"  canvas opened and closed {args.canvas_rounds} times (companion mode, a chart), after a forced GC, before → after:")
        print(f"    JS heap {before['heap']:.0f} → {after['heap']:.0f} KB; DOM nodes {before['nodes']} → {after['nodes']}; ", end="")
        print(f"listeners {before['listeners']} → {after['listeners']}; detached nodes {before['detached']} → {after['detached']}")
        browser.close()


if __name__ == "__main__":
    main()
