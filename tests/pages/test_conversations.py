"""Searching, pinning and sharing conversations from the chat page's sidebar (docs/api.md,
"Searching one's conversations", "Pins", "Share links")."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot
from tests.pages.test_sessions import say


def test_search_pin_and_share_from_the_sidebar(site: Site, person: Person, person_factory):
    site.chat_app("pages-conversations")
    page = person.open("/chat/pages-conversations/")
    say(page, "Tell me about lighthouses on **rocky** coasts")
    first_url = page.url
    page.get_by_role("button", name="New chat").click()
    say(page, "Recipes with pears")
    sidebar = page.get_by_role("navigation", name="Conversations")
    expect(sidebar.get_by_role("link")).to_have_count(2)

    # Search: the older conversation, found by a word of its question; opening it without a reload.
    sidebar.get_by_role("searchbox", name="Search conversations").fill("lighthouses")
    results = sidebar.get_by_role("list", name="Search results")
    expect(results.get_by_role("link").first).to_contain_text("lighthouses")  # its title, best first
    expect(results).not_to_contain_text("pears")
    expect(sidebar.locator(".session-list")).to_be_hidden()
    shot(page, "conversations-search")
    results.get_by_role("link").last.click()
    expect(page).to_have_url(first_url)
    sidebar.get_by_role("searchbox", name="Search conversations").press("Escape")
    expect(sidebar.locator(".session-list")).to_be_visible()

    # Pin the older one: it heads the list.
    links = sidebar.locator(".session-list").get_by_role("link")
    expect(links.first).to_have_text(re.compile("pears", re.I))
    expect(sidebar.locator('.session-list a[aria-current="page"]')).to_contain_text("lighthouses")
    page.wait_for_load_state("networkidle")
    sidebar.locator(".session", has_text=re.compile("lighthouses", re.I)).locator("summary").click()
    sidebar.get_by_role("button", name="Pin").click()
    expect(links.first).to_contain_text("lighthouses")
    expect(links.first).to_contain_text("Pinned")
    shot(page, "conversations-pinned")

    # Share it: another person opens the link and sees the conversation, read-only.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sidebar.locator(".session", has_text=re.compile("lighthouses", re.I)).locator("summary").click()
    sidebar.get_by_role("button", name="Share").click()
    expect(page.get_by_role("status")).to_contain_text("Share link copied")
    url = re.search(r"https?://\S+/shared/\S+", page.get_by_role("status").inner_text()).group(0)
    other = person_factory(given_name="Grace")
    shared = other.page
    shared.goto(url)
    expect(shared.get_by_role("heading", level=1)).to_contain_text("lighthouses")
    expect(shared.locator('[data-message-role="user"]')).to_have_text("Tell me about lighthouses on **rocky** coasts")
    expect(shared.locator("body[data-ready]")).to_be_attached()
    expect(shared.locator('[data-message-role="assistant"] strong')).to_have_text("rocky")  # its Markdown drawn
    expect(shared.get_by_role("textbox")).to_have_count(0)
    shot(shared, "conversations-shared")
