"""Keyboard-only use, the screen reader's view of a streaming answer, and a phone's width (README.md, "The chat page")."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.pages.conftest import Site, shot
from tests.peers.openai_server import Reply


def tab_to(page, name: str | re.Pattern[str], *, limit: int = 40) -> None:
    """Press Tab until the focused element's label (or text) is `name`, or matches it."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "() => { const e = document.activeElement;"
            " return e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].textContent) || e.textContent || ''; }"
        )
        if name.search(focused) if isinstance(name, re.Pattern) else focused.strip() == name:
            return
    raise AssertionError(f"{name!r} was not reached with Tab")


def test_the_page_works_end_to_end_with_the_keyboard_only(site: Site, model, person_factory):
    site.chat_app("pages-keyboard", features={"suggestions": {"enabled": True, "suggestions": ["Hello there"]}})
    model.script([Reply(text="First answer.", token_delay=0.02), Reply(text="Second answer.", token_delay=0.02)])
    person = person_factory()
    page = person.open("/chat/pages-keyboard/")
    expect(page.locator("body[data-ready]")).to_be_attached()

    # The skip link comes first and leads to the message box.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to the message box")).to_be_focused()
    page.keyboard.press("Enter")
    box = page.get_by_role("textbox", name="Ask a question")
    expect(box).to_be_focused()
    page.keyboard.type("Typed without a mouse")
    page.keyboard.press("Enter")
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    expect(answer).to_have_text(re.compile("First answer."))

    # Feedback by keyboard: Tab to the thumb, Enter, type, Enter.
    tab_to(page, "Thumbs up")
    page.keyboard.press("Enter")
    expect(page.get_by_role("textbox", name="Comment (optional)")).to_be_focused()
    page.keyboard.type("Clear.")
    tab_to(page, "Send feedback")
    page.keyboard.press("Enter")
    expect(answer.get_by_role("button", name="Thumbs up")).to_have_attribute("aria-pressed", "true")

    # A new chat and back to the first one, by keyboard.
    tab_to(page, "New chat")
    page.keyboard.press("Enter")
    expect(page.locator("[data-message-role]")).to_have_count(0)
    expect(box).to_be_focused()
    tab_to(page, "Hello there")  # a suggestion, sent with Enter
    page.keyboard.press("Enter")
    expect(page.locator('[data-message-role="assistant"]').last).to_have_text(re.compile("Second answer."))
    tab_to(page, re.compile("^Typed without a mouse"))  # its link in the sidebar
    page.keyboard.press("Enter")
    expect(page.locator('[data-message-role="user"]')).to_have_text("Typed without a mouse")
    shot(page, "keyboard-only")


def test_the_streaming_answer_sits_in_a_polite_live_region(site: Site, model, person_factory):
    site.chat_app("pages-live-region")
    model.script([Reply(text="one two three four five six", token_delay=0.1)])
    page = person_factory().open("/chat/pages-live-region/")
    page.get_by_role("textbox", name="Ask a question").fill("Count")
    page.keyboard.press("Enter")
    streaming = page.locator('[data-message-role="assistant"][aria-busy="true"]')
    expect(streaming).to_have_count(1)
    region = streaming.locator("xpath=ancestor::*[@aria-live][1]")
    expect(region).to_have_attribute("aria-live", "polite")
    expect(page.locator('[data-message-role="assistant"]')).to_have_attribute("data-message-id", re.compile(".+"))
    expect(page.locator('[data-message-role="assistant"][aria-busy]')).to_have_count(0)


def test_the_page_is_usable_at_a_phone_width(site: Site, model, person_factory):
    site.chat_app("pages-phone", features={"fileUpload": {"enabled": True}, "chatDisclaimerNotice": "Answers can be wrong."})
    model.script([Reply(text="A short answer that wraps on a narrow screen, with `code` and a [link](https://example.com).")])
    person = person_factory(viewport={"width": 375, "height": 740})
    page = person.open("/chat/pages-phone/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375, "no sideways scrolling"
    sidebar = page.get_by_role("navigation", name="Conversations")
    expect(sidebar).not_to_be_in_viewport()
    page.get_by_role("textbox", name="Ask a question").fill("Hello from a phone")
    page.get_by_role("button", name="Send").click()
    expect(page.locator('[data-message-role="assistant"]')).to_have_attribute("data-message-id", re.compile(".+"))
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    for control in (page.get_by_role("button", name="Send"), page.get_by_label("Attach file").locator("xpath=following-sibling::label[1]")):
        box = control.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375
    shot(page, "phone")

    toggle = page.get_by_role("button", name="Conversations")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(sidebar).to_be_in_viewport(ratio=1)  # slid in entirely
    expect(sidebar.get_by_role("link", name=re.compile("Hello from a phone"))).to_be_visible()
    shot(page, "phone-sidebar")
    page.keyboard.press("Escape")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_be_focused()
