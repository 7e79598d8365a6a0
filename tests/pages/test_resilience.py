"""Errors a person can act on, and a conversation that survives a lost connection (README.md, "The chat page")."""

from __future__ import annotations

import contextlib
import json
import re
import threading

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot, start_site
from tests.peers.openai_server import Reply

LONG = " ".join(f"word{i}" for i in range(60))


def ask(page, text: str) -> None:
    page.get_by_role("textbox", name="Ask a question").fill(text)
    page.get_by_role("button", name="Send").click()


def test_the_socket_dropped_mid_answer_reconnects_and_the_answer_goes_on(site: Site, model, person: Person):
    site.chat_app("pages-drop")
    model.script([Reply(text=LONG, token_delay=0.05)])
    page = person.page
    dropped = threading.Event()
    sent_by_page: list[str] = []

    def cut_after_a_few_deltas(socket):
        server = socket.connect_to_server()
        seen = []

        def relay(message):
            socket.send(message)
            if '"delta"' in str(message):
                seen.append(message)
                if len(seen) == 5 and not dropped.is_set():
                    dropped.set()
                    socket.close(code=4000, reason="network gone")
                    server.close()

        def forward(message):
            sent_by_page.append(str(message))
            server.send(message)

        server.on_message(relay)
        socket.on_message(forward)

    page.route_web_socket(re.compile(r".*/ws/chat/converse$"), cut_after_a_few_deltas)
    stored_reads = []
    page.on("request", lambda request: stored_reads.append(request.url) if re.search(r"/sessions/[^/]+/messages", request.url) else None)
    person.open("/chat/pages-drop/")
    ask(page, "Tell me a long story")
    # The reconnect may come before a busy machine paints the loss: either status shows it was seen.
    expect(page.get_by_role("status")).to_contain_text(re.compile("The connection was lost|Reconnected"), timeout=10000)
    shot(page, "connection-lost")
    expect(page.get_by_role("status")).to_contain_text("Reconnected")
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"), timeout=30000)
    expect(answer.locator(".message-body")).to_have_text(LONG)  # the events after the last one seen: none lost or repeated
    expect(
        page.get_by_role("navigation", name="Conversations").get_by_role("link", name=re.compile("Tell me a long story"))
    ).to_be_visible()
    assert dropped.is_set()
    resumes = [json.loads(message) for message in sent_by_page if '"resume"' in message]
    assert len(resumes) == 1 and re.fullmatch(r"[0-9a-f-]{36}:\d+", resumes[0]["lastEventId"]), sent_by_page
    assert stored_reads == [], "the answer is followed again, not polled for"
    shot(page, "connection-recovered")
    # The next turn goes through the new socket.
    model.script([Reply(text="Back again.")])
    ask(page, "Are you there?")
    expect(page.locator('[data-message-role="assistant"]').last).to_have_text("Back again.")


def test_when_the_socket_cannot_open_turns_stream_over_sse(site: Site, model, person: Person):
    site.chat_app("pages-sse")
    model.script([Reply(text="Streamed over server-sent events, word by word.", token_delay=0.03)])
    page = person.page
    page.route_web_socket(re.compile(r".*/ws/chat/converse$"), lambda socket: socket.close(code=1011, reason="refused"))
    sse = []
    page.on("request", lambda request: sse.append(request) if request.url.endswith("/api/chat/converse") else None)
    person.open("/chat/pages-sse/")
    ask(page, "Stream please")
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    expect(answer).to_have_text("Streamed over server-sent events, word by word.")
    assert len(sse) == 1 and sse[0].headers["accept"] == "text/event-stream"
    assert sse[0].headers["x-csrftoken"]
    expect(page.get_by_role("navigation", name="Conversations").get_by_role("link", name=re.compile("Stream please"))).to_be_visible()


def test_a_model_failure_says_so_and_can_be_retried(site: Site, model, person: Person):
    site.chat_app("pages-model-failure")
    model.script([Reply(status=500, headers={"x-should-retry": "false"}), Reply(text="Now it works.")])
    page = person.open("/chat/pages-model-failure/")
    ask(page, "Will this work?")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("The assistant could not answer: its model failed")
    shot(page, "error-model-failure")
    failed = page.get_by_role("article", name="The assistant could not answer")
    expect(failed.get_by_role("note")).to_contain_text("Not answered:")
    alert.get_by_role("button", name="Try again").click()
    expect(page.locator('[data-message-role="assistant"]').last).to_have_text("Now it works.")
    expect(page.locator(".alert")).to_be_empty()
    # The stored history: the failed attempt, marked as such, then the second one; a reload shows the same.
    expect(page.locator('[data-message-role="user"]')).to_have_count(2)
    shot(page, "error-model-failure-retried")
    page.reload()
    expect(page.get_by_role("article", name="The assistant could not answer").get_by_role("note")).to_contain_text("Not answered:")
    expect(page.locator('[data-message-role="assistant"]').last).to_have_text("Now it works.")


def test_a_chat_app_the_person_may_not_use_is_refused_plainly(site: Site, person: Person):
    site.chat_app("pages-internal-only", title="Internal only", userTypes=["internal-user"])
    response = person.page.goto(f"{site.url}/chat/pages-internal-only/")
    assert response.status == 403
    expect(person.page.get_by_role("heading", name="You cannot use this chat app")).to_be_visible()
    expect(person.page.get_by_role("link", name="Your chat apps")).to_be_visible()
    shot(person.page, "error-forbidden")
    assert person.page.goto(f"{site.url}/chat/no-such-app/").status == 404
    expect(person.page.get_by_role("heading", name="No such chat app")).to_be_visible()


def test_a_rate_limit_says_when_to_retry(site: Site, person_factory):
    """A server of its own with a budget of 4 Chat API requests a minute, on the same database."""
    with contextlib.ExitStack() as stack:
        env = {**site.env, "CHAT_RATE_LIMITS": '{"chat": 4}', "CHAT_RATE_LIMIT_WINDOW_SECONDS": "3600"}
        tight = start_site(env, site.model, stack, seed=False)
        tight.chat_app("pages-rate-limit")
        person = person_factory()
        person.site = tight
        page = person.open("/chat/pages-rate-limit/")  # the sessions list: 1
        for turn in range(1, 5):  # turns: 2, 3, 4, then refused
            ask(page, f"Message {turn}")
            if turn < 4:
                expect(page.locator('[data-message-role="assistant"][data-message-id]')).to_have_count(turn)
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text(re.compile(r"You are sending too many requests\. You can send again in \d+ seconds"))
        expect(page.get_by_role("button", name="Send")).to_be_disabled()
        # Nothing of the refused turn was stored: the message is back in the box, to send later.
        expect(page.locator('[data-message-role="user"]')).to_have_count(3)
        expect(page.get_by_role("textbox", name="Ask a question")).to_have_value("Message 4")
        shot(page, "error-rate-limited")
