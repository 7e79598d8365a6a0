"""Sessions in the sidebar: new chat, switching without a reload, renaming, the URL that follows,
feedback on answers, and the privacy of another person's session (README.md, "The chat page")."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot


def say(page, text: str) -> None:
    page.get_by_role("textbox", name="Ask a question").fill(text)
    page.keyboard.press("Enter")
    expect(page.locator('[data-message-role="assistant"]').last).to_have_attribute("data-message-id", re.compile(".+"))


def test_a_conversation_started_before_the_list_arrives_stays_in_it(site: Site, person: Person):
    """The page asks for the session list as it opens; on a busy server the answer can come after
    the first turn has started its session, and must not drop it."""
    site.chat_app("pages-sessions-late")
    held = []  # the first list, as the server gave it when asked (empty), answered only later

    def hold_the_first(route: Any) -> None:
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))

    person.page.route(re.compile(r"/api/chat/sessions\?"), hold_the_first)
    page = person.open("/chat/pages-sessions-late/")
    say(page, "Started before the list came")
    route, answer = held[0]
    assert answer.json()["sessions"] == []
    route.fulfill(response=answer)
    links = page.get_by_role("navigation", name="Conversations").get_by_role("link")
    expect(links).to_have_count(1)
    expect(links.first).to_have_text(re.compile("Started before the list came"))
    expect(links.first).to_have_attribute("aria-current", "page")


def test_sessions_switch_without_a_reload_and_the_url_follows(site: Site, person: Person):
    site.chat_app("pages-sessions")
    page = person.open("/chat/pages-sessions/")
    say(page, "First conversation about apples")
    first_url = page.url
    page.get_by_role("button", name="New chat").click()
    expect(page).to_have_url(f"{site.url}/chat/pages-sessions/")
    expect(page.locator("[data-message-role]")).to_have_count(0)
    say(page, "Second conversation about pears")
    second_url = page.url
    assert second_url != first_url

    sidebar = page.get_by_role("navigation", name="Conversations")
    links = sidebar.get_by_role("link")
    expect(links).to_have_count(2)
    expect(links.first).to_have_text(re.compile("Second conversation about pears"))  # newest first
    expect(links.first).to_have_attribute("aria-current", "page")

    page.evaluate("window.__stillHere = true")  # lost on a full reload
    links.nth(1).click()
    expect(page).to_have_url(first_url)
    expect(page.locator('[data-message-role="user"]')).to_have_text("First conversation about apples")
    expect(sidebar.get_by_role("link", name=re.compile("apples"))).to_have_attribute("aria-current", "page")
    page.go_back()
    expect(page).to_have_url(second_url)
    expect(page.locator('[data-message-role="user"]')).to_have_text("Second conversation about pears")
    assert page.evaluate("window.__stillHere") is True

    # Rename, by keyboard, from the conversation's menu.
    sidebar.get_by_label(re.compile("More for .*pears")).press("Enter")
    sidebar.get_by_role("button", name=re.compile("Rename .*pears")).press("Enter")
    title = sidebar.get_by_role("textbox", name="New title")
    expect(title).to_be_focused()
    title.fill("Pear talk")
    title.press("Enter")
    expect(sidebar.get_by_role("link", name=re.compile("Pear talk"))).to_be_visible()
    shot(page, "sessions-renamed")
    page.reload()
    expect(page.get_by_role("navigation", name="Conversations").get_by_role("link", name=re.compile("Pear talk"))).to_be_visible()
    assert person.api("GET", "/api/chat/sessions?chatAppId=pages-sessions").json()["sessions"][0]["title"] == "Pear talk"


def test_feedback_is_stored_and_shown_again(site: Site, person: Person):
    site.chat_app("pages-feedback")
    page = person.open("/chat/pages-feedback/")
    say(page, "Is this helpful?")
    answer = page.locator('[data-message-role="assistant"]').last
    message_id = answer.get_attribute("data-message-id")
    answer.get_by_role("button", name="Thumbs down").click()
    comment = answer.get_by_role("textbox", name="Comment (optional)")
    expect(comment).to_be_focused()
    comment.fill("It missed the point.")
    answer.get_by_role("button", name="Send feedback").click()
    expect(answer.get_by_role("button", name="Thumbs down")).to_have_attribute("aria-pressed", "true")
    expect(answer).to_contain_text("It missed the point.")
    shot(page, "feedback-sent")

    session_id = page.url.rsplit("/", 1)[1]
    stored = person.api("GET", f"/api/chat/sessions/{session_id}/feedback").json()["feedback"]
    assert [(item["messageId"], item["type"], item["userComment"]) for item in stored] == [
        (message_id, "user_thumbs_down", "It missed the point.")
    ]

    page.reload()
    again = page.locator('[data-message-role="assistant"]').last
    expect(again.get_by_role("button", name="Thumbs down")).to_have_attribute("aria-pressed", "true")
    expect(again.get_by_role("button", name="Thumbs up")).to_have_attribute("aria-pressed", "false")
    expect(again).to_contain_text("It missed the point.")


def test_another_persons_session_url_shows_nothing_of_it(site: Site, person_factory):
    site.chat_app("pages-private")
    owner = person_factory()
    page = owner.open("/chat/pages-private/")
    say(page, "My secret plan is tangerines")
    secret_url = page.url

    intruder = person_factory()
    response = intruder.page.goto(secret_url)
    assert response.status == 404
    expect(intruder.page.get_by_text("This conversation was not found")).to_be_visible()
    intruder.page.wait_for_timeout(500)  # the page's own requests have had time to run
    assert "tangerines" not in intruder.page.content()
    expect(intruder.page.locator("[data-message-role]")).to_have_count(0)
    expect(intruder.page.get_by_role("navigation", name="Conversations").get_by_role("link")).to_have_count(0)
    shot(intruder.page, "session-of-another-person")
    # What they type starts a session of their own.
    say(intruder.page, "Hello")
    assert intruder.page.url != secret_url
