"""The widget runtime in the chat page (docs/widgets.md, "window.chatRuntime",
"Events", "The context property"), in Chromium against the live server.

The scripted model writes tags into its answers, streamed in small deltas. The widgets come from
the platform as a deployment would serve them: built-in kinds, a `custom-compiled-in` renderer and
a recording web component from CHAT_WIDGET_RENDERERS_DIR (tests/pages/widget_assets), web
components from the widget store in each encoding, and scripts on other origins (one allowed by
CHAT_WIDGET_SCRIPT_ORIGINS, one not). The recording widget (test.recorder.js) writes into
`window.__widgetLog` what it receives, so each runtime operation and event is seen from a widget.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot, start_site
from tests.peers.openai_server import Reply
from tests.peers.threaded import ThreadedServer
from tests.servers import ROOT

ASSETS = Path(__file__).parent / "widget_assets"
APP = "widgets-app"
EVENTS = [
    "widgetOpen", "widgetClose", "widgetReady", "canvasOpen", "canvasClose",
    "chatPaneMinimized", "chatPaneExpanded", "companionModeEnter", "companionModeExit",
]  # fmt: skip
# A 1x1 PNG, as a data: address (the page's img-src allows data:).
PIXEL = (
    "data:image/png;base64,"
    + base64.b64encode(
        bytes.fromhex(
            "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5"
            "b6e0f30000000049454e44ae426082"
        )
    ).decode()
)


def other_origin_script(scope: dict[str, Any]) -> tuple[int, dict[str, Any], bytes]:
    name = scope["path"].rsplit("/", 1)[-1].removesuffix(".js")
    define = f'customElements.define("{name}", class extends HTMLElement {{'
    body = define + ' connectedCallback() { this.textContent = "from another origin"; } });'
    headers = {"content-type": "text/javascript", "access-control-allow-origin": "*"}
    return 200, headers, body.encode()


async def script_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An origin other than the platform's, serving `<element-name>.js` that defines that element."""
    status, headers, body = other_origin_script(scope)
    await send({"type": "http.response.start", "status": status, "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})
    await send({"type": "http.response.body", "body": body})


def _tag(tag: str, widget: dict[str, Any], contexts: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    llm = fields.pop("canBeGeneratedByLlm", True)
    return {
        "scope": "test",
        "tag": tag,
        "usageMode": fields.pop("usageMode", "global"),
        "widget": widget,
        "llmInstructionsMd": f"Write <test.{tag}> when asked.",
        "status": fields.pop("status", "enabled"),
        "renderingContexts": contexts or {"inline": {"enabled": True}},
        "canBeGeneratedByLlm": llm,
        "canBeGeneratedByTool": fields.pop("canBeGeneratedByTool", False),
        "description": f"the {tag} test widget",
        **fields,
    }


def _component(**fields: Any) -> dict[str, Any]:
    return {"type": "web-component", "webComponent": fields}


EVERYWHERE = {"inline": True, "canvas": {"enabled": True}, "dialog": {"enabled": True}}


def definitions(own: str, allowed: int, refused: int) -> list[dict[str, Any]]:
    return [
        _tag("chart", {"type": "built-in", "builtInType": "chart"}, EVERYWHERE),
        _tag("image", {"type": "built-in", "builtInType": "image"}),
        _tag("ask", {"type": "built-in", "builtInType": "prompt"}),
        _tag("custom", {"type": "custom-compiled-in"}, EVERYWHERE),
        _tag("recorder", _component(url=f"{own}/widgets/renderers/test.recorder.js", customElementName="test-recorder"), EVERYWHERE),
        _tag(
            "beacon",
            _component(url=f"{own}/widgets/renderers/test.recorder.js", customElementName="test-recorder"),
            {"static": {"enabled": True, "shutDownAfterMs": 800}},
        ),
        _tag("meta", {"type": "pass-through"}),
        _tag("panel", _component(url=f"{own}/widgets/renderers/test.recorder.js", customElementName="test-recorder"), {"canvas": True}),
        _tag("stored-gzip", _component(storeBucket="widgets", storeKey="stored.js.gz", encoding="gzip", customElementName="stored-gzip")),
        _tag(
            "stored-b64",
            _component(
                store={"storeBucket": "widgets", "storeKey": "stored.js.b64"}, encoding="gzip+base64", customElementName="stored-b64"
            ),
        ),
        _tag("stored-none", _component(storeBucket="widgets", storeKey="stored.js", encoding="none", customElementName="stored-none")),
        _tag("elsewhere", _component(url=f"http://127.0.0.1:{allowed}/other-allowed.js", customElementName="other-allowed")),
        _tag("foreign", _component(url=f"http://127.0.0.1:{refused}/other-refused.js", customElementName="other-refused")),
        # Not usable from the model, for four reasons: tool-only, disabled, prohibited site-wide, not enabled in the app.
        _tag(
            "toolonly",
            {"type": "built-in", "builtInType": "chart"},
            canBeGeneratedByLlm=False,
            canBeGeneratedByTool=True,
            llmInstructionsMd=None,
        ),
        _tag("offline", {"type": "built-in", "builtInType": "chart"}, status="disabled"),
        _tag("banned", {"type": "built-in", "builtInType": "chart"}),
        _tag("apponly", {"type": "built-in", "builtInType": "chart"}, usageMode="chat-app"),
    ]


@pytest.fixture(scope="module")
def wsite(site: Site) -> Iterator[Site]:
    """The platform with the `tags` feature on site-wide, the test widgets' renderer folder, and
    one other origin allowed for scripts."""
    with contextlib.ExitStack() as stack:
        allowed, refused = ThreadedServer(script_app, name="allowed-origin"), ThreadedServer(script_app, name="refused-origin")
        allowed_port, refused_port = allowed.start(), refused.start()
        stack.callback(allowed.stop)
        stack.callback(refused.stop)
        env = {
            **site.env,
            "CHAT_SITE_FEATURES": json.dumps(
                {
                    "promptInputFieldLabel": "Ask a question",
                    "tags": {"enabled": True, "tagsProhibited": [{"scope": "test", "tag": "banned"}]},
                }
            ),
            "CHAT_WIDGET_RENDERERS_DIR": str(ASSETS),
            "CHAT_WIDGET_SCRIPT_ORIGINS": f"http://127.0.0.1:{allowed_port}",
        }
        script = (ASSETS / "stored.js").read_bytes()
        for key, encoding in (("stored.js.gz", "gzip"), ("stored.js.b64", "gzip+base64"), ("stored.js", "none")):
            subprocess.run(
                [sys.executable, "manage.py", "store_put", "widgets", key, str(ASSETS / "stored.js"), "--encode", encoding],
                cwd=ROOT, env=env, check=True, capture_output=True,
            )  # fmt: skip
        assert script
        wide = start_site(env, site.model, stack, seed=False)
        for definition in definitions(wide.url, allowed_port, refused_port):
            definition = {key: value for key, value in definition.items() if value is not None}
            answer = wide.api("POST", "/api/chat-admin/tagdef", json={"tagDefinition": definition})
            assert answer.status_code == 200, answer.text
        wide.api("POST", "/api/chat-admin/tagdef/clear-cache")
        wide.chat_app(APP, features={"tags": {"enabled": True}})
        yield wide


def open_chat(person: Person, wsite: Site) -> Any:
    page = person.page
    page.goto(f"{wsite.url}/chat/{APP}/")
    page.wait_for_function("document.body.dataset.ready === 'true' && !!window.chatRuntime")
    page.evaluate(
        """(names) => { window.__events = []; window.__widgetLog = window.__widgetLog || [];
        for (const name of names) window.chatRuntime.addEventListener(name, (payload) => window.__events.push([name, payload])); }""",
        EVENTS,
    )
    return page


def ask(page: Any, model: Any, text: str, *, chunks: list[str] | None = None, delay: float = 0.005) -> Any:
    model.script([Reply(text=text, chunks=chunks, token_delay=delay)])
    page.locator("#prompt").fill("Show me")
    page.get_by_role("button", name="Send").click()
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    return answer


def log(page: Any, kind: str | None = None) -> list[dict[str, Any]]:
    entries = page.evaluate("window.__widgetLog || []")
    return [entry for entry in entries if kind is None or entry["kind"] == kind]


def events(page: Any, *names: str) -> list[list[Any]]:
    return [event for event in page.evaluate("window.__events") if not names or event[0] in names]


# --- tags in answers ----------------------------------------------------------------------------


def test_each_widget_kind_renders_inline_from_a_streamed_answer(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    text = (
        "Here are your figures.\n\n"
        '<test.chart title="Sales">{"type": "bar", "labels": ["Jan", "Feb", "Mar"], '
        '"series": [{"label": "EUR", "data": [3, 5, 4]}]}</test.chart>\n\n'
        f'An image: <test.image src="{PIXEL}" alt="one pixel" caption="A pixel"/>\n\n'
        '<test.ask text="What about April?"/>\n\n'
        '<test.custom>{"city": "Lyon"}</test.custom>\n\n'
        '<test.recorder title="Inline recorder" mood="fine">plain words</test.recorder>\n\n'
        '<test.meta kind="secret">not for people</test.meta>\n\n'
        "That is all."
    )
    answer = ask(page, model, text)
    frames = answer.locator(".widget-frame")
    expect(frames).to_have_count(5)  # the pass-through tag renders nothing
    expect(answer.locator(".widget-chart canvas")).to_have_count(1)
    expect(answer.locator(".widget-chart")).to_have_attribute("aria-label", "Sales")
    expect(answer.get_by_role("img", name="one pixel")).to_be_visible()
    expect(answer.get_by_role("button", name="What about April?")).to_be_visible()
    expect(answer.locator(".custom-rendered")).to_have_text('custom inline {"city":"Lyon"}')
    expect(answer.locator("test-recorder")).to_contain_text('recorder plain words {"title":"Inline recorder","mood":"fine"}')
    expect(answer).to_contain_text("That is all.")
    assert "not for people" not in answer.inner_text() and "test.meta" not in answer.inner_text()
    assert page.evaluate("window.__customContext") == {"connected": False, "tagId": "test.custom"}
    shot(page, "widgets-inline")

    # A stored answer (a reload) renders the same widgets.
    page.reload()
    page.wait_for_function("document.body.dataset.ready === 'true'")
    stored = page.locator('[data-message-role="assistant"]').last
    expect(stored.locator(".widget-frame")).to_have_count(5)
    expect(stored.locator(".widget-chart canvas")).to_have_count(1)


def test_tags_not_usable_here_or_from_the_model_show_as_text(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    text = (
        '<test.toolonly>{"data": [1]}</test.toolonly> and <test.offline>{"data": [2]}</test.offline> and '
        '<test.banned>{"data": [3]}</test.banned> and <test.apponly>{"data": [4]}</test.apponly> and <test.nosuch x="1"/> end.'
    )
    answer = ask(page, model, text)
    expect(answer).to_contain_text('<test.toolonly>{"data": [1]}</test.toolonly>')
    for tag in ("offline", "banned", "apponly"):
        expect(answer).to_contain_text(f"<test.{tag}>")
    expect(answer).to_contain_text('<test.nosuch x="1"/> end.')
    expect(answer.locator(".widget-frame, .widget-pending")).to_have_count(0)
    shot(page, "widgets-not-usable-as-text")


def test_a_tag_split_across_many_deltas_renders_once_and_never_flashes_as_text(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    # Anything of a tag's markup that ever shows in the conversation while it streams is recorded.
    page.evaluate(
        """() => { window.__flashes = [];
        new MutationObserver(() => { const text = document.querySelector('.messages').innerText;
          if (/<\\/?test\\.|test\\.recorder/.test(text)) window.__flashes.push(text.slice(-80)); })
        .observe(document.querySelector('.messages'), {subtree: true, childList: true, characterData: true}); }"""
    )
    text = 'Before the widget. <test.recorder title="Split" n="7">{"split": true, "parts": [1, 2, 3]}</test.recorder> After the widget.'
    chunks = [text[index : index + 2] for index in range(0, len(text), 2)]
    answer = ask(page, model, text, chunks=chunks, delay=0.01)
    expect(answer.locator("test-recorder")).to_have_count(1)
    expect(answer).to_contain_text("After the widget.")
    assert page.evaluate("window.__flashes") == []
    contexts = log(page, "context")
    assert len(contexts) == 1 and contexts[0]["data"] == {"split": True, "parts": [1, 2, 3]}
    assert contexts[0]["attributes"] == {"title": "Split", "n": "7"}
    assert [event[0] for event in events(page, "widgetOpen")] == ["widgetOpen"]


def test_injection_in_attributes_and_bodies_never_runs(wsite: Site, model, person_factory):
    person = person_factory(bypass_csp=True)  # the runtime alone, without the page's policy
    page = open_chat(person, wsite)
    text = (
        '<test.recorder title=\'"><script>window.__pwned=1</script>\' onerror="window.__pwned=2">'
        '<img src=x onerror="window.__pwned=3"><script>window.__pwned=4</script></test.recorder>\n\n'
        '<test.image src="javascript:window.__pwned=5" alt="x"/>\n\n'
        '<test.custom>"><svg onload="window.__pwned=6"></svg></test.custom>\n\n'
        '<test.chart title="<img src=x onerror=window.__pwned=7>">'
        '{"labels": ["<b onmouseover=window.__pwned=8>"], "data": [1]}</test.chart>\n\nDone.'
    )
    answer = ask(page, model, text)
    expect(answer).to_contain_text("Done.")
    page.wait_for_timeout(400)
    assert page.evaluate("window.__pwned") is None
    recorder = log(page, "context")[0]
    assert recorder["attributes"]["title"] == '"><script>window.__pwned=1</script>'
    assert recorder["attributes"]["onerror"] == "window.__pwned=2"
    assert recorder["data"] == '<img src=x onerror="window.__pwned=3"><script>window.__pwned=4</script>'
    # The markup shows as text where a widget prints it; no element of it exists.
    assert answer.locator("script, [onerror], [onload], [onmouseover], img[src='x']").count() == 0
    assert "<script" not in answer.inner_html()
    expect(answer.locator(".widget-failed")).to_have_count(1)  # the javascript: image is refused
    # A widget's own iconSvg and action icons are sanitized SVG.
    page.evaluate(
        """(id) => window.chatRuntime.getWidgetMetadataAPI('test', 'recorder', id).setMetadata({
            iconSvg: '<svg viewBox="0 0 8 8" onload="window.__pwned=9"><script>window.__pwned=10</script>'
                   + '<circle cx="4" cy="4" r="3"/></svg>',
            actions: [{id: 'x', title: 'X',
                       iconSvg: '<svg><foreignObject><img src=x onerror="window.__pwned=11"></foreignObject></svg>'}]})""",
        recorder["instanceId"],
    )
    icon = answer.locator(f'.widget-frame[data-instance-id="{recorder["instanceId"]}"] .widget-icon svg')
    expect(icon.locator("circle")).to_have_count(1)
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert answer.locator("script, [onerror], [onload], foreignObject").count() == 0
    shot(page, "widgets-injection")


# --- web components --------------------------------------------------------------------------


def test_web_components_from_the_store_in_each_encoding_and_from_allowed_origins_only(wsite: Site, model, person: Person):
    page = person.page
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None)
    page = open_chat(person, wsite)
    text = (
        "<test.stored-gzip>zipped</test.stored-gzip>\n\n<test.stored-b64>based</test.stored-b64>\n\n"
        "<test.stored-none>plain</test.stored-none>\n\n<test.elsewhere>x</test.elsewhere>\n\n<test.foreign>y</test.foreign>\n\nEnd."
    )
    answer = ask(page, model, text)
    expect(answer.locator("stored-gzip")).to_have_text("from the store (stored-gzip): zipped")
    expect(answer.locator("stored-b64")).to_have_text("from the store (stored-b64): based")
    expect(answer.locator("stored-none")).to_have_text("from the store (stored-none): plain")
    expect(answer.locator("other-allowed")).to_have_text("from another origin")
    refused = answer.locator('.widget-frame[data-tag-id="test.foreign"]')
    expect(refused.locator(".widget-error")).to_contain_text("could not load")
    assert page.evaluate("!!customElements.get('other-refused')") is False
    assert any("other-refused.js" in text for text in violations), violations
    shot(page, "widgets-web-components")


# --- runtime operations and events ---------------------------------------------------------------


def test_every_runtime_operation_and_event_through_a_recording_widget(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    answer = ask(page, model, '<test.recorder title="Ops">{"n": 1}</test.recorder> and <test.recorder loading="stay">two</test.recorder>')
    expect(answer.locator("test-recorder")).to_have_count(2)
    contexts = log(page, "context")
    first, second = sorted(contexts, key=lambda entry: entry["data"] == "two")
    # docs/widgets.md, "The context property": the context is there before the element is connected, with every field.
    assert first["connected"] is False and first["isRuntime"] is True
    assert first["tagId"] == "test.recorder" and first["renderingContext"] == "inline" and first["data"] == {"n": 1}
    assert first["appState"]["chatAppId"] == APP and first["appState"]["userId"] == person.user_id
    one, two = first["instanceId"], second["instanceId"]

    # getWidgetMetadataAPI: title, lucide icon (an SVG), colour, actions; loading status in the chrome.
    chrome = answer.locator(f'.widget-frame[data-instance-id="{one}"] > .widget-chrome')
    expect(chrome.locator(".widget-title")).to_have_text("Ops")
    expect(chrome.locator(".widget-icon svg.lucide-activity path")).not_to_have_count(0)
    assert chrome.locator(".widget-icon").evaluate("node => getComputedStyle(node).color") == "rgb(220, 38, 38)"
    chrome.get_by_role("button", name="Take a note").click()
    other = answer.locator(f'.widget-frame[data-instance-id="{two}"]')
    expect(other.locator(".widget-loading")).to_have_text("Fetching figures")
    expect(other).to_have_attribute("aria-busy", "true")
    # signalWidgetReady emits widgetReady (the first one signalled; the second stays loading).
    assert [event[1] for event in events(page, "widgetReady") if event[1]["tagId"] == "test.recorder"] == [
        {"tagId": "test.recorder", "instanceId": one, "renderingContext": "inline"}
    ]
    page.evaluate(
        "([scope, tag, id]) => window.chatRuntime.getWidgetMetadataAPI(scope, tag, id, 'inline').setLoadingStatus(false)",
        ["test", "recorder", two],
    )
    expect(other.locator(".widget-loading")).to_be_hidden()

    # sendCommandToWidget reaches the handler of registerIntentRouterHandler, and answers its result.
    result = page.evaluate("(id) => window.chatRuntime.sendCommandToWidget(id, {intent: 'zoom', level: 2})", one)
    assert result == {"handledBy": one, "echo": {"intent": "zoom", "level": 2}}
    assert log(page, "command") == [{"kind": "command", "instanceId": one, "command": {"intent": "zoom", "level": 2}}]
    assert log(page, "action") == [{"kind": "action", "id": "note", "instanceId": one, "same": True}]

    # addEventListener answers an unsubscribe function; an instance's listeners go with it.
    page.evaluate(
        """(id) => { window.__heard = 0; const off = window.chatRuntime.addEventListener('widgetReady', () => window.__heard++);
        window.chatRuntime.signalWidgetReady(id); off(); window.chatRuntime.signalWidgetReady(id); }""",
        two,
    )
    assert page.evaluate("window.__heard") == 1

    # suggestQuestion pre-fills the input (focus and highlight by default; focus off when asked).
    page.evaluate("() => window.chatRuntime.suggestQuestion('How about May?')")
    expect(page.locator("#prompt")).to_have_value("How about May?")
    expect(page.locator("#prompt")).to_be_focused()
    expect(page.locator("#prompt")).to_have_class(re.compile("prompt-highlight"))
    page.locator(".app-title").click()
    page.evaluate("() => window.chatRuntime.suggestQuestion('Quietly', {focus: false, highlight: false})")
    expect(page.locator("#prompt")).to_have_value("Quietly")
    expect(page.locator("#prompt")).not_to_be_focused()

    # Events each widget hears about itself: after a new chat the inline widgets close, and their
    # own listeners and handlers are gone (nothing heard once the instance is destroyed).
    page.get_by_role("button", name="New chat").click()
    closed = [event[1] for event in events(page, "widgetClose")]
    assert {"tagId": "test.recorder", "instanceId": one, "renderingContext": "inline"} in closed
    heard_before = len(log(page, "event"))
    page.evaluate("() => window.chatRuntime.renderTag('test.recorder', 'dialog', 'third')")
    expect(page.locator("dialog.widget-dialog test-recorder")).to_be_visible()
    assert all(entry["heardBy"] not in (one, two) for entry in log(page, "event")[heard_before:])
    with pytest.raises(Exception, match="no widget instance"):
        page.evaluate("(id) => window.chatRuntime.sendCommandToWidget(id, {})", one)
    page.keyboard.press("Escape")
    expect(page.locator("dialog.widget-dialog")).to_have_count(0)
    names = {event[0] for event in events(page)}
    assert {"widgetOpen", "widgetClose", "widgetReady"} <= names


def test_a_canvas_in_companion_mode_and_its_close_confirmation(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    ask(page, model, "A first answer so the chat has something.")
    instance = page.evaluate(
        """() => window.chatRuntime.renderTag('test.recorder', 'canvas', {
            companionMode: true, chatPaneMinimized: true, data: {doc: 'draft'},
            closeConfig: {confirmOnClose: true, confirmTitle: 'Discard the draft?', confirmMessage: 'Your changes are lost.',
                          confirmButtonLabel: 'Discard', cancelButtonLabel: 'Keep editing'}})"""
    )
    panel = page.locator(".canvas-panel")
    expect(panel.locator("test-recorder")).to_contain_text('recorder {"doc":"draft"}')
    assert [event[0] for event in events(page, "canvasOpen", "companionModeEnter", "chatPaneMinimized")] == [
        "canvasOpen",
        "companionModeEnter",
        "chatPaneMinimized",
    ]
    assert events(page, "canvasOpen")[0][1] == {"tagId": "test.recorder", "instanceId": instance}
    assert events(page, "companionModeEnter")[0][1] == {} and events(page, "chatPaneMinimized")[0][1] == {}
    strip = page.locator(".conversation").bounding_box()
    assert strip["width"] <= 24, strip
    shot(page, "widgets-canvas-companion-minimised")
    page.get_by_role("button", name="Expand the chat").click()
    assert [event[0] for event in events(page, "chatPaneExpanded")] == ["chatPaneExpanded"]
    assert 300 <= page.locator(".conversation").bounding_box()["width"] <= 380
    shot(page, "widgets-canvas-companion")

    # The close button asks through the page's own dialog: cancelled, then accepted.
    assert page.evaluate("typeof window.chatRuntime.requestCanvasClose") == "function"
    page.evaluate(
        """() => { window.confirm = () => { window.__nativeConfirm = true; return true; };
        window.__closing = window.chatRuntime.requestCanvasClose(); }"""
    )
    confirm = page.get_by_role("dialog", name="Discard the draft?")
    expect(confirm).to_contain_text("Your changes are lost.")
    shot(page, "widgets-canvas-close-confirmation")
    confirm.get_by_role("button", name="Keep editing").click()
    assert page.evaluate("window.__closing") is False
    expect(panel).to_have_count(1)
    page.evaluate("() => { window.__closing = window.chatRuntime.requestCanvasClose(); }")
    page.get_by_role("dialog", name="Discard the draft?").get_by_role("button", name="Discard").click()
    assert page.evaluate("window.__closing") is True
    expect(panel).to_have_count(0)
    assert page.evaluate("window.__nativeConfirm") is None
    tail = [event[0] for event in events(page, "widgetClose", "canvasClose", "companionModeExit")]
    assert tail == ["companionModeExit", "widgetClose", "canvasClose"]
    assert events(page, "canvasClose")[0][1] == {"tagId": "test.recorder", "instanceId": instance}
    # No canvas open: a close request has nothing to ask and resolves true.
    assert page.evaluate("window.chatRuntime.requestCanvasClose()") is True


def test_a_canvas_is_resizable_and_full_control_hides_the_title_bar(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    page.evaluate("() => window.chatRuntime.renderTag('test.chart', 'canvas', {labels: [1, 2, 3], data: [2, 4, 3]})")
    panel = page.locator(".canvas-panel")
    expect(panel.locator(".widget-chart canvas")).to_have_count(1)
    expect(panel.locator(".widget-chrome")).to_be_visible()
    before = panel.bounding_box()["width"]
    handle = panel.get_by_role("separator", name="Resize the panel").bounding_box()
    page.mouse.move(handle["x"] + 4, handle["y"] + 100)
    page.mouse.down()
    page.mouse.move(handle["x"] - 120, handle["y"] + 100, steps=5)
    page.mouse.up()
    assert panel.bounding_box()["width"] == pytest.approx(before + 124, abs=6)
    shot(page, "widgets-canvas-chart")
    # A new canvas replaces the open one; with fullControl the widget draws its own chrome.
    page.evaluate("() => window.chatRuntime.renderTag('test.custom', 'canvas', {fullControl: true, data: 'all mine'})")
    expect(panel).to_have_count(1)
    expect(panel.locator(".custom-rendered")).to_have_text("custom canvas all mine")
    expect(panel.locator(".widget-chrome")).to_be_hidden()
    assert [event[1]["tagId"] for event in events(page, "canvasClose")] == ["test.chart"]


def test_a_dialog_shows_the_widget_actions_with_the_primary_one_in_the_footer(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    page.evaluate("() => window.chatRuntime.renderTag('test.recorder', 'dialog', {form: 1}, {title: 'Edit the form'})")
    dialog = page.get_by_role("dialog", name="Recorder")
    expect(dialog.locator("test-recorder")).to_contain_text('recorder {"form":1}')
    footer = dialog.locator(".widget-dialog-footer")
    expect(footer.get_by_role("button", name="Save")).to_have_class(re.compile("button-primary"))
    expect(footer.get_by_role("button", name="Take a note")).to_have_count(0)
    shot(page, "widgets-dialog")
    dialog.get_by_role("button", name="Take a note").click()
    footer.get_by_role("button", name="Save").click()
    assert [entry["id"] for entry in log(page, "action")] == ["note", "save"]
    dialog.get_by_role("button", name="Close", exact=True).click()
    expect(page.locator("dialog")).to_have_count(0)
    assert events(page, "widgetClose")[-1][1]["renderingContext"] == "dialog"
    # Built-in and custom kinds open in a dialog too.
    page.evaluate("() => window.chatRuntime.renderTag('test.chart', 'dialog', {labels: ['a', 'b'], data: [1, 2]})")
    expect(page.locator("dialog.widget-dialog .widget-chart canvas")).to_have_count(1)
    page.keyboard.press("Escape")
    page.evaluate("() => window.chatRuntime.renderTag('test.custom', 'dialog', 'boxed')")
    expect(page.locator("dialog.widget-dialog .custom-rendered")).to_have_text("custom dialog boxed")


def test_an_unknown_tag_in_a_canvas_or_dialog_gets_a_minimal_definition(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    page.evaluate(
        """() => customElements.define('adhoc-note', class extends HTMLElement {
            connectedCallback() { this.textContent = 'ad hoc ' + this.context.renderingContext; } })"""
    )
    page.evaluate("() => window.chatRuntime.renderTag('adhoc.note', 'canvas', null)")
    expect(page.locator(".canvas-panel adhoc-note")).to_have_text("ad hoc canvas")
    page.evaluate("() => window.chatRuntime.renderTag('adhoc.other-note', 'dialog', null)")
    expect(page.locator("dialog .widget-error")).to_contain_text("no element <adhoc-other-note> was defined", timeout=12000)
    with pytest.raises(Exception, match="no widget definition"):
        page.evaluate("() => window.chatRuntime.renderTag('adhoc.note2', 'inline', null)")


def test_a_static_widget_runs_hidden_and_is_removed_after_its_time(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    answer = ask(page, model, "Starting the beacon <test.beacon/> now.")
    expect(answer).to_contain_text("now.")
    page.wait_for_function(
        "() => window.__events.some(([name, p]) => name === 'widgetClose' && p.renderingContext === 'static')", timeout=5000
    )
    opened = page.evaluate("window.__widgetLog.find((e) => e.kind === 'context' && e.renderingContext === 'static')")
    assert opened and opened["connected"] is False
    assert page.locator("#widget-static-host").is_hidden()
    expect(page.locator("#widget-static-host test-recorder")).to_have_count(0)
    timing = page.evaluate(
        """() => { const e = window.__widgetLog; const open = e.findIndex((x) => x.kind === 'context' && x.renderingContext === 'static');
        return open >= 0; }"""
    )
    assert timing
    # The shutdown is timed: measured from a renderTag call.
    lived = page.evaluate(
        """() => new Promise((resolve) => { const started = performance.now();
        const off = window.chatRuntime.addEventListener('widgetClose', (p) => {
          if (p.renderingContext === 'static') { off(); resolve(performance.now() - started); } });
        window.chatRuntime.renderTag('test.beacon', 'static', 'again'); })"""
    )
    assert 780 <= lived < 1500, lived


def test_prompt_widgets_send_or_suggest(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    answer = ask(page, model, '<test.ask text="Tell me more"/>\n\n<test.ask mode="suggest" focus="false" text="Draft a reply"/>')
    answer.get_by_role("button", name="Draft a reply").click()
    expect(page.locator("#prompt")).to_have_value("Draft a reply")
    expect(page.locator("#prompt")).not_to_be_focused()
    model.script([Reply(text="More, then.", token_delay=0.005)])
    answer.get_by_role("button", name="Tell me more").click()
    expect(page.locator('[data-message-role="user"]').last).to_contain_text("Tell me more")
    expect(page.locator('[data-message-role="assistant"]').last).to_contain_text("More, then.")


def test_a_tag_that_only_renders_in_a_canvas_is_a_button_in_the_message(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    answer = ask(page, model, 'Your report is ready: <test.panel>{"report": 7}</test.panel>')
    expect(answer.locator(".widget-frame")).to_have_count(0)
    answer.get_by_role("button", name="Open the panel test widget").click()
    expect(page.locator(".canvas-panel test-recorder")).to_contain_text('recorder {"report":7}')
    assert events(page, "canvasOpen")[0][1]["tagId"] == "test.panel"


def test_a_widget_that_grows_after_its_answer_keeps_the_end_in_view(wsite: Site, model, person: Person):
    page = open_chat(person, wsite)
    ask(page, model, "Your figures:\n\n<test.recorder>grows</test.recorder>")
    widget = page.locator('[data-message-role="assistant"]').last.locator("test-recorder")
    expect(widget).to_have_text(re.compile("recorder"))
    pane = page.locator(".messages")
    from_end = "pane => pane.scrollHeight - pane.scrollTop - pane.clientHeight"

    # Its answer complete, the widget grows (its data arrived): the conversation follows it.
    widget.evaluate("node => { node.style.display = 'block'; node.style.height = '1500px'; }")
    page.wait_for_function(f"() => ({from_end})(document.querySelector('.messages')) < 2")
    shot(page, "widgets-grown")

    # Scrolled up by the person, it is left where they are when the widget grows again.
    pane.evaluate("pane => { pane.scrollTop = 0; pane.dispatchEvent(new Event('scroll')); }")
    widget.evaluate("node => { node.style.height = '2500px'; }")
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")  # observers ran
    assert pane.evaluate("pane => pane.scrollTop") == 0
