"""A person's data on the chat page (docs/api.md, "Your data"): deleting a conversation from the
sidebar after a confirmation, "Download my data", and a usage limit's refusal said as the limit
and when it resets."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot
from tests.pages.test_sessions import say


def test_a_conversation_is_deleted_from_the_sidebar_once_confirmed(site: Site, person: Person):
    site.chat_app("pages-delete")
    page = person.open("/chat/pages-delete/")
    say(page, "Keep this one about apples")
    page.get_by_role("button", name="New chat").click()
    say(page, "Forget this one about pears")
    sidebar = page.get_by_role("navigation", name="Conversations")
    expect(sidebar.get_by_role("link")).to_have_count(2)

    sidebar.get_by_label(re.compile("More for .*pears")).click()
    sidebar.get_by_role("button", name=re.compile("Delete .*pears")).click()
    confirm = sidebar.get_by_role("group", name="Confirm deletion")
    expect(confirm).to_contain_text("cannot be undone")
    shot(page, "session-delete-confirm")
    confirm.get_by_role("button", name="Cancel").click()  # nothing happens without the confirmation
    expect(sidebar.get_by_role("link")).to_have_count(2)

    sidebar.get_by_label(re.compile("More for .*pears")).click()
    sidebar.get_by_role("button", name=re.compile("Delete .*pears")).click()
    sidebar.get_by_role("group", name="Confirm deletion").get_by_role("button", name="Delete").click()

    expect(sidebar.get_by_role("link")).to_have_count(1)
    expect(sidebar.get_by_role("link")).to_have_text(re.compile("apples"))
    expect(page).to_have_url(f"{site.url}/chat/pages-delete/")  # the conversation shown was the one deleted
    expect(page.locator("[data-message-role]")).to_have_count(0)
    listed = person.api("GET", "/api/chat/sessions?chatAppId=pages-delete").json()["sessions"]
    assert [session["title"] for session in listed] == [sidebar.get_by_role("link").locator(".session-title").inner_text()]
    page.reload()
    expect(page.get_by_role("navigation", name="Conversations").get_by_role("link")).to_have_count(1)


def test_download_my_data_saves_the_export_of_the_person(site: Site, person: Person):
    site.chat_app("pages-export")
    page = person.open("/chat/pages-export/")
    say(page, "Something to export")

    with page.expect_download() as downloading:
        page.get_by_role("link", name="Download my data").click()

    download = downloading.value
    assert download.suggested_filename == "my-chat-data.json"
    export = json.loads(Path(download.path()).read_text())["export"]
    assert export["user"]["userId"] == person.user_id
    assert export["sessions"][0]["messages"][0]["message"] == "Something to export"


def test_download_my_data_is_at_hand_on_a_phone_too(site: Site, person_factory):
    site.chat_app("pages-export")
    page = person_factory(viewport={"width": 390, "height": 780}).open("/chat/pages-export/")
    link = page.get_by_role("link", name="Download my data")
    expect(link).to_be_visible()
    expect(page.get_by_role("button", name="Conversations")).to_be_visible()
    shot(page, "download-my-data-phone")


def test_a_usage_limit_refusal_says_which_limit_and_when_it_resets(site: Site, person: Person, model):
    site.chat_app("pages-limits", features={"usageLimits": {"enabled": True, "perUser": {"daily": {"tokens": 10}}}})
    page = person.open("/chat/pages-limits/")
    say(page, "One question")  # 15 tokens: the limit is reached
    asked = len(model.requests)

    page.get_by_role("textbox", name="Ask a question").fill("Another question")
    page.keyboard.press("Enter")

    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("You have reached your daily limit of 10 tokens in chat app pages-limits")
    expect(alert).to_contain_text("You can send messages again after")
    shot(page, "usage-limit-refused")
    assert len(model.requests) == asked
