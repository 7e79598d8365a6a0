"""Durable turns on the chat page (docs/api.md, "Resume, stop and approvals"): Stop ends an answer
and keeps what had streamed, a reload or a second tab follows the running answer live, and a tool
call that waits for a person is a card with Approve and Deny."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.factories import ADD_FUNCTION
from tests.pages.conftest import MODEL, Person, Site, shot, start_site
from tests.peers.openai_server import Reply, ToolCall

WORDS = [f"word{i}" for i in range(60)]
LONG = " ".join(WORDS)
PACE = 0.08  # seconds a word: the answer still streams after a reload on a busy machine (4.8 s in all)
APPROVALS_AGENT = "pages-approvals"


def ask(page, text: str) -> None:
    page.get_by_role("textbox", name="Ask a question").fill(text)
    page.get_by_role("button", name="Send").click()


def answer_of(page):
    return page.locator('[data-message-role="assistant"]').last


def session_path(page) -> str:
    expect(page).to_have_url(re.compile(r"/chat/[^/]+/[0-9a-f-]{36}$"))
    return re.sub(r"^https?://[^/]+", "", page.url)


def wait_until(check, *, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def two_tabs_then_a_long_answer(site: Site, model, person: Person, chat_app_id: str, **app: Any) -> tuple[Any, Any]:
    """Two tabs of `person` on one conversation with a first answer; then the first tab asks for
    the long answer, which is streaming when this returns."""
    site.chat_app(chat_app_id, **app)
    model.script([Reply(text="A first answer."), Reply(text=LONG, token_delay=PACE)])
    first = person.open(f"/chat/{chat_app_id}/")
    ask(first, "Hello")
    expect(answer_of(first)).to_have_attribute("data-message-id", re.compile(".+"))
    second = person.context.new_page()
    second.goto(f"{site.url}{session_path(first)}")
    expect(answer_of(second)).to_have_text("A first answer.")
    ask(first, "Tell me a long story")
    expect(answer_of(first)).to_contain_text("word3")
    return first, second


def test_stop_ends_the_answer_and_keeps_what_had_streamed(site: Site, model, person: Person):
    site.chat_app("pages-stop")
    model.script([Reply(text=LONG, token_delay=PACE)])
    page = person.open("/chat/pages-stop/")
    ask(page, "Tell me a long story")
    answer = answer_of(page)
    expect(answer).to_contain_text("word5")
    expect(page.get_by_role("button", name="Send")).to_be_hidden()
    stop = page.get_by_role("button", name="Stop")
    shot(page, "durable-streaming-with-stop")
    stop.click()

    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    expect(answer.get_by_role("note")).to_have_text("Stopped")
    expect(stop).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    shown = answer.locator(".message-body").inner_text()
    assert shown.startswith("word0 word1") and "word59" not in shown
    shot(page, "durable-stopped")

    # Stored as stopped: a reload shows the same partial answer, marked the same way.
    page.reload()
    again = answer_of(page)
    expect(again.get_by_role("note")).to_have_text("Stopped")
    expect(again.locator(".message-body")).to_have_text(shown)


@pytest.mark.parametrize("transport", ["websocket", "sse"])
def test_a_reload_mid_answer_goes_on_with_the_answer_live(site: Site, model, person: Person, transport: str):
    site.chat_app("pages-reload")
    model.script([Reply(text=LONG, token_delay=PACE)])
    page = person.page
    resumed_over = []
    page.on(
        "request", lambda request: resumed_over.append(request.headers.get("last-event-id")) if request.url.endswith("/stream") else None
    )
    if transport == "sse":  # the socket cannot open: the turn and its resume go over Server-Sent Events
        page.route_web_socket(re.compile(r".*/ws/chat/converse$"), lambda socket: socket.close(code=1011, reason="refused"))
    person.open("/chat/pages-reload/")
    ask(page, "Tell me a long story")
    expect(answer_of(page)).to_contain_text("word8")
    path = session_path(page)

    stored_reads = []
    page.on(
        "request",
        lambda request: stored_reads.append(request.url) if "/api/chat/sessions/" in request.url and "/messages" in request.url else None,
    )
    page.reload()
    answer = answer_of(page)
    # Live again before it ends: the text so far at once, still streaming, and Stop offered.
    expect(answer).to_have_attribute("aria-busy", "true")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(answer).to_contain_text("word30")
    expect(answer).not_to_have_attribute("data-message-id", re.compile(".+"))
    shot(page, "durable-reloaded-mid-answer")

    expect(answer).to_have_attribute("data-message-id", re.compile(".+"), timeout=15000)
    expect(answer.locator(".message-body")).to_have_text(LONG)  # nothing lost, nothing repeated
    expect(page.locator('[data-message-role="user"]')).to_have_text(["Tell me a long story"])
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert page.url.endswith(path)
    assert len(stored_reads) == 1, "the stored messages are read once, when the page opens, not polled"
    assert resumed_over == ([None] if transport == "sse" else []), "followed from the turn's start, over the transport in use"


def test_a_second_tab_follows_the_same_answer(site: Site, model, person: Person):
    site.chat_app("pages-two-tabs")
    model.script([Reply(text=LONG, token_delay=PACE)])
    first = person.open("/chat/pages-two-tabs/")
    ask(first, "Tell me a long story")
    expect(answer_of(first)).to_contain_text("word5")
    path = session_path(first)

    second = person.context.new_page()
    second.goto(f"{site.url}{path}")
    followed = answer_of(second)
    expect(followed).to_have_attribute("aria-busy", "true")
    expect(followed).to_contain_text("word20")
    shot(second, "durable-second-tab")
    for page in (first, second):
        expect(answer_of(page)).to_have_attribute("data-message-id", re.compile(".+"), timeout=15000)
        expect(answer_of(page).locator(".message-body")).to_have_text(LONG)
    assert answer_of(first).get_attribute("data-message-id") == followed.get_attribute("data-message-id")


def test_a_tab_left_open_catches_up_with_a_turn_another_tab_started(site: Site, model, person: Person):
    first, second = two_tabs_then_a_long_answer(site, model, person, "pages-catch-up")
    # Headless Chromium keeps every tab visible: the event a browser sends when the tab is shown again.
    second.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(second.locator('[data-message-role="user"]')).to_have_text(["Hello", "Tell me a long story"])
    expect(answer_of(second)).to_have_attribute("aria-busy", "true")
    expect(answer_of(second).locator(".message-body")).to_have_text(LONG, timeout=15000)
    expect(answer_of(first)).to_have_attribute("data-message-id", re.compile(".+"))
    expect(answer_of(second)).to_have_attribute("data-message-id", answer_of(first).get_attribute("data-message-id"))
    expect(second.locator('[data-message-role="assistant"]')).to_have_count(2)


@pytest.fixture
def approvals_app(site: Site) -> Iterator[str]:
    """A chat app whose agent has `add(a, b)`, every call of which waits for a person."""
    tool = {
        "toolId": "pages-refunds@1",
        "executionType": "inline",
        "name": "refunds",
        "displayName": "Refunds",
        "description": "Adds two numbers, after a person approves",
        "supportedAgentFrameworks": ["hosted"],
        "functionSchema": [ADD_FUNCTION],
        "code": "(event, params) => ({ sum: params.a + params.b })",
        "approval": {"required": True, "timeoutSeconds": 3600},
    }
    assert site.api("POST", "/api/chat-admin/tool", json={"tool": tool}).status_code == 200
    agent = {"agentId": APPROVALS_AGENT, "basePrompt": "You add numbers.", "toolIds": [tool["toolId"]], "foundationModel": MODEL}
    assert site.api("POST", "/api/chat-admin/agent", json={"agent": agent}).status_code == 200
    site.chat_app("pages-approvals", agentId=APPROVALS_AGENT)
    yield "pages-approvals"


def test_an_approved_call_runs_and_the_answer_goes_on(site: Site, model, person: Person, approvals_app: str):
    model.script([Reply(text="Let me add that.", tool_calls=[ToolCall("add", {"a": 2, "b": 3})]), Reply(text="It is 5.", token_delay=0.05)])
    page = person.open(f"/chat/{approvals_app}/")
    ask(page, "What is 2 + 3?")
    answer = answer_of(page)
    card = answer.get_by_role("group", name="Approval: add")
    expect(card).to_be_visible()
    expect(card.get_by_label("Arguments")).to_have_text(json.dumps({"a": 2, "b": 3}, indent=2))
    expect(card).to_contain_text("Tool pages-refunds@1")
    expect(card).to_contain_text("Waits for a decision until")
    expect(answer.locator(".message-body")).to_have_text("Let me add that.")
    expect(page.get_by_role("button", name="Send")).to_be_visible()  # the turn waits; the page does not
    assert len(model.requests) == 1, "the call did not run"
    shot(page, "durable-approval-card")

    card.get_by_role("button", name="Approve").click()
    expect(card).to_contain_text("Approved")
    expect(card).to_contain_text("The assistant asked to run add")
    expect(answer.locator(".message-body")).to_contain_text("It is 5.")
    expect(answer.locator(".message-body")).to_contain_text("Let me add that.")
    expect(answer).not_to_have_attribute("aria-busy", "true")
    assert json.loads(model.tool_results(1)[0][1]) == {"sum": 5}
    shot(page, "durable-approval-approved")

    text = answer.locator(".message-body").inner_text()
    page.reload()
    again = answer_of(page)
    expect(again.locator(".message-body")).to_have_text(text)
    expect(again.get_by_role("group", name="Approval: add")).to_contain_text("Approved")
    expect(again.get_by_role("button", name="Approve")).to_have_count(0)


def test_a_denied_call_is_refused_from_the_keyboard_after_a_reload(site: Site, model, person: Person, approvals_app: str):
    model.script([Reply(tool_calls=[ToolCall("add", {"a": 1000, "b": 1})]), Reply(text="Understood, I will not add them.")])
    page = person.open(f"/chat/{approvals_app}/")
    ask(page, "Add 1000 and 1")
    expect(answer_of(page).get_by_role("group", name="Approval: add")).to_be_visible()
    # The pending call is stored: a reload shows its card, still asking.
    page.reload()
    card = answer_of(page).get_by_role("group", name="Approval: add")
    expect(card.get_by_label("Arguments")).to_contain_text('"a": 1000')
    deny = card.get_by_role("button", name="Deny")
    deny.focus()
    page.keyboard.press("Enter")
    expect(card).to_contain_text("Denied")
    expect(card).to_be_focused()
    expect(answer_of(page).locator(".message-body")).to_have_text("Understood, I will not add them.")
    ((_, result),) = model.tool_results(1)
    assert "refused" in result
    shot(page, "durable-approval-denied")


def test_a_new_message_supersedes_a_waiting_call_and_the_page_shows_both_answers(site: Site, model, person: Person, approvals_app: str):
    model.script(
        [
            Reply(text="Shall I?", tool_calls=[ToolCall("add", {"a": 2, "b": 2})]),
            Reply(text="Fine, I will not add them."),  # the superseded turn goes on first
            Reply(text="Hello again."),
        ]
    )
    page = person.open(f"/chat/{approvals_app}/")
    ask(page, "Add 2 and 2")
    first = page.locator('[data-message-role="assistant"]').first
    card = first.get_by_role("group", name="Approval: add")
    expect(card.get_by_role("button", name="Approve")).to_be_visible()
    ask(page, "Never mind")
    expect(answer_of(page).locator(".message-body")).to_have_text("Hello again.")
    expect(card).to_contain_text("Denied: superseded")
    expect(first.locator(".message-body p")).to_have_text(["Shall I?", "Fine, I will not add them."])


def test_stop_in_a_second_tab_stops_the_answer_in_the_first(site: Site, model, person: Person):
    site.chat_app("pages-stop-elsewhere")
    model.script([Reply(text=LONG, token_delay=PACE)])
    first = person.open("/chat/pages-stop-elsewhere/")
    ask(first, "Tell me a long story")
    expect(answer_of(first)).to_contain_text("word3")
    second = person.context.new_page()
    second.goto(f"{site.url}{session_path(first)}")
    expect(answer_of(second)).to_have_attribute("aria-busy", "true")
    second.get_by_role("button", name="Stop").click()
    for page in (second, first):
        expect(answer_of(page).get_by_role("note")).to_have_text("Stopped")
        expect(page.get_by_role("button", name="Send")).to_be_visible()
    # textContent: a tab in the background lays out none of its blocks, which innerText then skips.
    shown = answer_of(first).locator(".message-body").text_content()
    assert shown.startswith("word0 word1") and "word59" not in shown
    assert shown == answer_of(second).locator(".message-body").text_content()


def test_a_card_decided_in_another_tab_says_so_and_the_answer_goes_on(site: Site, model, person: Person, approvals_app: str):
    model.script([Reply(text="Let me add that.", tool_calls=[ToolCall("add", {"a": 4, "b": 4})]), Reply(text="It is 8.", token_delay=0.05)])
    first = person.open(f"/chat/{approvals_app}/")
    ask(first, "What is 4 + 4?")
    stale = answer_of(first).get_by_role("group", name="Approval: add")
    expect(stale.get_by_role("button", name="Approve")).to_be_visible()
    second = person.context.new_page()
    second.goto(f"{site.url}{session_path(first)}")
    answer_of(second).get_by_role("group", name="Approval: add").get_by_role("button", name="Approve").click()
    expect(answer_of(second).locator(".message-body")).to_contain_text("It is 8.")

    stale.get_by_role("button", name="Deny").click()  # too late: approved in the other tab
    expect(stale).to_contain_text("Approved")
    expect(answer_of(first).locator(".message-body")).to_have_text(answer_of(second).locator(".message-body").text_content())
    expect(first.locator(".alert")).to_be_empty()
    expect(first.locator(".status")).not_to_contain_text("waits for your approval")


def test_leaving_a_streaming_conversation_and_coming_back_follows_it_again(site: Site, model, person: Person):
    site.chat_app("pages-leave")
    model.script([Reply(text=LONG, token_delay=PACE), Reply(text="A new chat answers at once.")])
    page = person.open("/chat/pages-leave/")
    ask(page, "Tell me a long story")
    expect(answer_of(page)).to_contain_text("word5")
    path = session_path(page)

    page.get_by_role("button", name="New chat").click()
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    ask(page, "Hello")  # not queued behind the turn left: a socket of its own
    expect(answer_of(page)).to_have_text("A new chat answers at once.")
    expect(answer_of(page)).to_have_attribute("data-message-id", re.compile(".+"))

    # Titled after its answer, which the page no longer follows: found by its address.
    page.get_by_role("navigation", name="Conversations").locator(f'a[href="{path}"]').click()
    expect(page).to_have_url(re.compile(re.escape(path) + "$"))
    expect(answer_of(page)).to_have_attribute("data-message-id", re.compile(".+"), timeout=15000)
    expect(answer_of(page).locator(".message-body")).to_have_text(LONG)
    expect(page.locator('[data-message-role="assistant"]')).to_have_count(1)


def test_a_turn_no_longer_kept_when_the_connection_comes_back_shows_as_stored(site: Site, model, person_factory):
    """A server of its own that keeps a turn's events 1 s after it ends: the page is offline past that."""
    with contextlib.ExitStack() as stack:
        brief = start_site({**site.env, "CHAT_STREAM_REPLAY_SECONDS": "1"}, site.model, stack, seed=False)
        brief.chat_app("pages-offline")
        model.script([Reply(text=LONG, token_delay=0.03)])
        person = person_factory()
        person.site = brief
        page = person.page
        offline = threading.Event()

        def cut_then_refuse(socket):
            if offline.is_set():
                socket.close(code=1006, reason="offline")
                return
            server = socket.connect_to_server()
            deltas = []

            def relay(message):
                socket.send(message)
                if '"delta"' in str(message):
                    deltas.append(message)
                    if len(deltas) == 5 and not offline.is_set():
                        offline.set()
                        socket.close(code=4000, reason="network gone")
                        server.close()

            server.on_message(relay)
            socket.on_message(server.send)

        page.route_web_socket(re.compile(r".*/ws/chat/converse$"), cut_then_refuse)
        page.route(re.compile(r".*/stream(\?.*)?$"), lambda route: route.abort() if offline.is_set() else route.continue_())
        person.open("/chat/pages-offline/")
        ask(page, "Tell me a long story")
        expect(page.get_by_role("status")).to_contain_text("Reconnecting", timeout=10000)
        messages = f"/api/chat/sessions/{session_path(page).rsplit('/', 1)[1]}/messages"
        wait_until(lambda: len(person.api("GET", messages).json()["messages"]) == 2, seconds=15)
        time.sleep(1.5)  # the turn's events are forgotten
        stored_reads = []
        page.on("request", lambda request: stored_reads.append(request.url) if messages in request.url else None)
        offline.clear()

        answer = answer_of(page)
        expect(answer).to_have_attribute("data-message-id", re.compile(".+"), timeout=20000)
        expect(answer.locator(".message-body")).to_have_text(LONG)
        expect(page.locator('[data-message-role="assistant"]')).to_have_count(1)
        expect(page.locator(".alert")).to_be_empty()
        assert len(stored_reads) == 1, "nothing left to resume: the conversation is read as stored, once"


def test_a_message_refused_while_another_tab_streams_keeps_its_text_and_follows_that_answer(site: Site, model, person: Person):
    _, second = two_tabs_then_a_long_answer(site, model, person, "pages-busy", features={"concurrentTurns": {"strategy": "reject"}})
    ask(second, "Me too")
    expect(second.get_by_role("alert")).to_contain_text("still answering another message")
    expect(second.get_by_role("textbox", name="Ask a question")).to_have_value("Me too")
    expect(answer_of(second)).to_have_attribute("aria-busy", "true")  # the other tab's answer, live
    expect(second.locator('[data-message-role="user"]')).to_have_text(["Hello", "Tell me a long story"])
    shot(second, "durable-session-busy")
    expect(answer_of(second).locator(".message-body")).to_have_text(LONG, timeout=15000)
    expect(second.get_by_role("button", name="Send")).to_be_enabled()


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="a turn's events reach another server process through Redis")
def test_a_tab_on_another_server_process_follows_the_answer_and_stops_it(site: Site, model, person: Person):
    """Two processes on the same database and Redis, as behind a load balancer."""
    with contextlib.ExitStack() as stack:
        other = start_site(site.env, site.model, stack, seed=False)
        site.chat_app("pages-two-processes")
        model.script([Reply(text=LONG, token_delay=PACE)])
        first = person.open("/chat/pages-two-processes/")
        ask(first, "Tell me a long story")
        expect(answer_of(first)).to_contain_text("word3")
        second = person.context.new_page()  # cookies go by host, not port: the same person
        second.goto(f"{other.url}{session_path(first)}")
        followed = answer_of(second)
        expect(followed).to_have_attribute("aria-busy", "true")
        expect(followed).to_contain_text("word12")
        second.get_by_role("button", name="Stop").click()
        for page in (second, first):
            expect(answer_of(page).get_by_role("note")).to_have_text("Stopped")
        shown = answer_of(first).locator(".message-body").text_content()
        assert "word59" not in shown and shown == followed.locator(".message-body").text_content()


def test_two_waiting_calls_go_on_once_both_are_decided(site: Site, model, person: Person, approvals_app: str):
    calls = [ToolCall("add", {"a": 1, "b": 2}), ToolCall("add", {"a": 30, "b": 40})]
    model.script([Reply(text="Two sums.", tool_calls=calls), Reply(text="One ran, one was refused.")])
    page = person.open(f"/chat/{approvals_app}/")
    ask(page, "Add both")
    cards = answer_of(page).get_by_role("group", name="Approval: add")
    expect(cards).to_have_count(2)
    cards.nth(0).get_by_role("button", name="Approve").click()
    expect(cards.nth(0)).to_contain_text("Approved")
    expect(cards.nth(1).get_by_role("button", name="Deny")).to_be_enabled()
    assert len(model.requests) == 1, "the turn waits for the second decision"
    cards.nth(1).get_by_role("button", name="Deny").click()
    expect(cards.nth(1)).to_contain_text("Denied")
    expect(answer_of(page).locator(".message-body p")).to_have_text(["Two sums.", "One ran, one was refused."])
    results = dict(model.tool_results(1))
    assert json.loads(results[calls[0].id]) == {"sum": 3} and "refused" in results[calls[1].id]
