"""A person signs in, talks to an agent and finds the conversation again (README.md, "The chat page")."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot
from tests.peers.openai_server import Reply

ANSWER = (
    "Here is what I found:\n\n"
    "- first point\n- second point\n\n"
    "| planet | moons |\n|---|---|\n| Mars | 2 |\n\n"
    "```python\nprint('hi')\n```\n\n"
    "See [the docs](https://example.com/docs)."
)


def count_paints_before_done(page) -> None:
    """Records each change of the streaming answer, and whether the answer was stored (its id) yet."""
    page.add_init_script(
        """
        window.__paints = [];
        new MutationObserver((records) => {
          const answer = [...document.querySelectorAll('[data-message-role="assistant"]')].pop();
          if (!answer) return;
          if (records.some((r) => answer.contains(r.target) && r.target !== answer)) {
            window.__paints.push({ stored: answer.hasAttribute("data-message-id"), text: answer.innerText.length });
          }
        }).observe(document, { subtree: true, childList: true, characterData: true });
        """
    )


@pytest.fixture
def demo_on_the_scripted_model(site: Site, model) -> Iterator[None]:
    """The demo agent answers through the scripted model, which paces its words (the offline
    model sends its whole echo at once: one paint)."""
    model.script(lambda body: Reply(text="Mars has two small moons, Phobos and Deimos, and a thin atmosphere.", token_delay=0.04))
    agent = {"agentId": "demo-assistant", "foundationModel": "openai:scripted"}
    assert site.api("POST", "/api/chat-admin/agent", json={"agent": agent}).status_code == 200
    yield
    assert site.api("POST", "/api/chat-admin/agent", json={"agent": {**agent, "foundationModel": "offline"}}).status_code == 200


def test_a_person_signs_in_talks_finds_the_conversation_again_and_signs_out(site: Site, person_factory, demo_on_the_scripted_model):
    """The demo chat app of `make run`, as a person finds it."""
    visitor = person_factory(signed_in=False)
    page = visitor.page
    count_paints_before_done(page)

    page.goto(f"{site.url}/chat/demo/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/chat/demo/"))
    shot(page, "sign-in")
    page.get_by_label("User name").fill("demo")
    page.get_by_label("Password").fill("demo-chat")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{site.url}/chat/demo/")

    page.get_by_role("textbox", name="Ask the demo assistant").fill("What do you know about Mars and its two small moons?")
    page.get_by_role("button", name="Send").click()
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer).to_have_attribute("data-message-id", re.compile(r"^[0-9a-f-]{36}$"))
    expect(answer.locator(".message-body")).to_have_text("Mars has two small moons, Phobos and Deimos, and a thin atmosphere.")
    paints = page.evaluate("window.__paints")
    assert len([p for p in paints if not p["stored"] and p["text"] > 0]) > 1, "the answer was painted more than once before done"

    # The URL follows the new session; its title appears in the sidebar.
    expect(page).to_have_url(re.compile(rf"{site.url}/chat/demo/[0-9a-f-]{{36}}$"))
    session_url = page.url
    sidebar = page.get_by_role("navigation", name="Conversations")
    expect(sidebar.get_by_role("link", name=re.compile("What do you know about Mars"))).to_be_visible()
    shot(page, "conversation-demo")

    page.reload()
    expect(page.locator('[data-message-role="user"]')).to_have_text("What do you know about Mars and its two small moons?")
    expect(page.locator('[data-message-role="assistant"]')).to_have_text(re.compile("Phobos and Deimos"))
    assert page.url == session_url

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.goto(session_url)
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
    refused = visitor.context.request.get(f"{site.url}/api/chat/sessions")
    assert refused.status == 401


def test_an_answer_streams_in_as_markdown(site: Site, model, person: Person):
    site.chat_app("pages-markdown")
    model.script([Reply(text=ANSWER, token_delay=0.03)])
    page = person.page
    count_paints_before_done(page)
    person.open("/chat/pages-markdown/")
    page.get_by_role("textbox", name="Ask a question").fill("Tell me about Mars")
    page.keyboard.press("Enter")
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer.locator("pre code")).to_be_visible()
    shot(page, "conversation-streaming")
    expect(answer).to_have_attribute("data-message-id", re.compile(r"^[0-9a-f-]{36}$"))
    shot(page, "conversation-markdown")

    paints = page.evaluate("window.__paints")
    assert len([p for p in paints if not p["stored"] and p["text"] > 0]) > 5
    assert answer.locator("ul > li").all_inner_texts() == ["first point", "second point"]
    assert answer.locator("table td").all_inner_texts() == ["Mars", "2"]
    assert answer.locator("pre code").inner_text().strip() == "print('hi')"
    link = answer.get_by_role("link", name="the docs")
    assert link.get_attribute("href") == "https://example.com/docs"
    assert link.get_attribute("rel") == "noopener noreferrer nofollow"

    # The stored answer renders the same after a reload.
    page.reload()
    stored = page.locator('[data-message-role="assistant"]').last
    expect(stored.locator("table td")).to_have_text(["Mars", "2"])
    expect(stored.locator("ul > li")).to_have_count(2)


def test_a_wrong_password_is_said_plainly(site: Site, person_factory):
    page = person_factory(signed_in=False).page
    page.goto(f"{site.url}/accounts/login/")
    page.get_by_label("User name").fill("demo")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("do not match")
    shot(page, "sign-in-refused")


def test_the_home_page_lists_the_chat_apps_of_this_person(site: Site, person: Person):
    site.chat_app("pages-home-internal", title="Internal help desk", userTypes=["internal-user"])
    page = person.open("/")
    expect(page.get_by_role("link", name=re.compile("Demo chat"))).to_be_visible()
    expect(page.get_by_role("link", name=re.compile("Internal help desk"))).to_have_count(0)
    shot(page, "home")
    page.get_by_role("link", name=re.compile("Demo chat")).click()
    expect(page).to_have_url(f"{site.url}/chat/demo/")
