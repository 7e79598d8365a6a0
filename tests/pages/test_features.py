"""Every chat-app feature the page shows, on and off (docs/api.md, "Features")."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot
from tests.peers.openai_server import Reply

SUGGESTIONS = ["What is the weather?", "Tell me a joke", "Summarise my day"]
ON = {
    "suggestions": {"enabled": True, "suggestions": SUGGESTIONS, "randomize": True, "maxToShow": 2},
    "promptInputFieldLabel": {"enabled": True, "promptInputFieldLabel": "Ask the oracle"},
    "chatDisclaimerNotice": {"enabled": True, "notice": "The oracle can be wrong."},
    "traces": {"enabled": True},
    "verifyResponse": {"enabled": True},
    "fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/plain"]},
    "logout": {"enabled": True},
    "uiCustomization": {"enabled": True, "title": "The Oracle", "accentColor": "#8a2be2"},
}
OFF = {name: {**value, "enabled": False} for name, value in ON.items()}


def graded(body):
    """The agent's model answers; the verification model grades it A."""
    if body.get("model") == "grader":
        return Reply(text="<grade>A</grade><feedback>Complete.</feedback>")
    return Reply(text="Forty-two, as always.", token_delay=0.01)


def test_every_feature_on_shows_on_the_page(site: Site, model, person: Person):
    site.chat_app("pages-features-on", title="Features on", features=ON)
    model.script(graded)
    page = person.open("/chat/pages-features-on/")

    expect(page.get_by_role("heading", name="The Oracle")).to_be_visible()
    send = page.get_by_role("button", name="Send")
    assert send.evaluate("node => getComputedStyle(node).backgroundColor") == "rgb(138, 43, 226)"
    expect(page.get_by_text("The oracle can be wrong.")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    expect(page.get_by_label("Attach file")).to_be_attached()
    suggestions = page.get_by_role("group", name="Suggestions").get_by_role("button")
    expect(suggestions).to_have_count(2)
    shown = suggestions.all_inner_texts()
    assert set(shown) <= set(SUGGESTIONS) and len(set(shown)) == 2
    shot(page, "features-on")

    suggestions.first.click()
    expect(page.locator('[data-message-role="user"]')).to_have_text(shown[0])
    answer = page.locator('[data-message-role="assistant"]')
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    expect(page.get_by_role("group", name="Suggestions")).to_be_hidden()
    expect(answer.get_by_text("Verified: grade A")).to_be_visible()
    traces = answer.locator("details.traces")
    expect(traces.locator("summary")).to_have_text(re.compile(r"Traces \(\d+\)"))
    traces.locator("summary").click()
    expect(traces).to_contain_text("Model openai:scripted")
    expect(traces).to_contain_text("Verification: grade A")
    shot(page, "features-on-answer")

    # The input's accessible name is the chat app's label (docs/api.md, "Features").
    page.get_by_role("textbox", name="Ask the oracle").fill("And again?")
    page.keyboard.press("Enter")
    expect(page.locator('[data-message-role="assistant"][data-message-id]')).to_have_count(2)

    # A reload shows the stored traces and grade.
    page.reload()
    stored = page.locator('[data-message-role="assistant"]').first
    expect(stored.get_by_text("Verified: grade A")).to_be_visible()
    expect(stored.locator("details.traces summary")).to_have_text(re.compile(r"Traces \(\d+\)"))


def test_every_feature_off_leaves_the_page_plain(site: Site, model, person: Person):
    site.chat_app("pages-features-off", title="Features off", features=OFF)
    model.script(graded)
    page = person.open("/chat/pages-features-off/")

    expect(page.get_by_role("heading", name="Features off")).to_be_visible()
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)
    expect(page.get_by_label("Attach file")).to_have_count(0)
    expect(page.get_by_role("group", name="Suggestions")).to_have_count(0)
    expect(page.get_by_text("The oracle can be wrong.")).to_have_count(0)
    box = page.get_by_role("textbox", name="Message")  # the default label (docs/api.md, "Features")
    box.fill("Hello")
    page.get_by_role("button", name="Send").click()
    answer = page.locator('[data-message-role="assistant"]')
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    expect(answer).to_have_text(re.compile("Forty-two"))
    expect(answer.locator("details.traces")).to_have_count(0)
    expect(answer.locator(".grade")).to_have_count(0)
    shot(page, "features-off")
    assert [request.get("model") for request in model.requests] == ["scripted"], "no verification call"

    session_id = page.url.rsplit("/", 1)[1]
    messages = person.api("GET", f"/api/chat/sessions/{session_id}/messages").json()["messages"]
    assert all("traces" not in message for message in messages)


def test_the_site_default_label_names_the_input_when_the_app_sets_none(site: Site, person: Person):
    site.chat_app("pages-default-label")
    page = person.open("/chat/pages-default-label/")
    expect(page.get_by_role("textbox", name="Ask a question")).to_be_visible()
