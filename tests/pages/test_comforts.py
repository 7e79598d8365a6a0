"""The chat page's everyday comforts (docs/api.md, "The chat page"): copying an answer and a code
block, code highlighted by highlight.js, light and dark themes kept in the person's prefs."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot, start_site
from tests.pages.test_sessions import say
from tests.peers.openai_server import Reply

ANSWER = """Here is **the function**:

```python
def greet(name: str) -> str:
    # say hello
    return f"Hello, {name}!"
```

And that is all."""


def test_copy_puts_the_answers_markdown_and_a_code_blocks_code_on_the_clipboard(site: Site, person: Person, model):
    site.chat_app("pages-comforts")
    model.script([Reply(text=ANSWER, token_delay=0.01)])
    person.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url)
    page = person.open("/chat/pages-comforts/")
    say(page, "Write a greeting function")
    answer = page.locator('[data-message-role="assistant"]').last

    answer.get_by_role("button", name="Copy the answer").click()
    expect(answer.get_by_role("button", name="Copy the answer")).to_have_attribute("data-label", "Copied")
    expect(answer.locator(".message-footer [aria-live=polite]")).to_have_text("Copied to the clipboard")
    assert page.evaluate("navigator.clipboard.readText()") == ANSWER

    answer.get_by_role("button", name="Copy the python code").click()
    expect(answer.get_by_role("button", name="Copy the python code")).to_have_attribute("data-label", "Copied")
    code = ANSWER.split("```python\n")[1].split("```")[0]
    assert page.evaluate("navigator.clipboard.readText()") == code
    shot(page, "comforts-copied")


def test_a_shared_conversation_highlights_its_code_too(site: Site, person: Person, person_factory, model):
    site.chat_app("pages-shared-code")
    model.script([Reply(text=ANSWER)])
    page = person.open("/chat/pages-shared-code/")
    say(page, "Write a greeting function")
    session_id = page.url.rstrip("/").rsplit("/", 1)[1]
    url = person.api("POST", f"/api/chat/sessions/{session_id}/share").json()["url"]
    other = person_factory(given_name="Grace").page
    other.goto(url)
    code = other.locator('[data-message-role="assistant"] pre code')
    expect(code).to_have_attribute("data-language", "python")
    expect(code.locator(".hljs-keyword").first).to_have_text("def")
    expect(other.get_by_role("button", name="Copy the python code")).to_be_visible()
    shot(other, "comforts-shared-code")


def test_a_code_block_is_highlighted_in_both_themes_and_the_choice_is_kept(site: Site, person: Person, model):
    site.chat_app("pages-themes")
    model.script([Reply(text=ANSWER, token_delay=0.01)])
    page = person.open("/chat/pages-themes/")
    scripts: list[str] = []
    page.on("request", lambda request: scripts.append(request.url) if request.resource_type == "script" else None)
    expect(page.locator("body[data-ready]")).to_be_attached()
    assert not [url for url in scripts if "highlight" in url], "highlight.js waits for a code block"
    say(page, "Write a greeting function")
    code = page.locator('[data-message-role="assistant"] pre code')
    expect(code).to_have_attribute("data-language", "python")
    keyword = code.locator(".hljs-keyword").first
    expect(keyword).to_have_text("def")
    expect(code.locator(".hljs-comment")).to_have_text("# say hello")
    colour = lambda: keyword.evaluate("node => getComputedStyle(node).color")  # noqa: E731
    background = lambda: page.locator(".code-block").evaluate("node => getComputedStyle(node).backgroundColor")  # noqa: E731

    theme = page.get_by_role("combobox", name="Theme")
    theme.select_option("light")
    light = (colour(), background())
    shot(page, "comforts-code-light")
    with page.expect_response(re.compile(r"/api/chat/user/prefs$")) as saved:
        theme.select_option("dark")
    assert saved.value.ok
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    dark = (colour(), background())
    assert light != dark and light[0] != light[1] and dark[0] != dark[1]
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(17, 20, 24)"
    shot(page, "comforts-code-dark")

    # Kept in the person's prefs, and rendered by the server: the reload starts dark.
    assert person.api("GET", "/api/chat/user/prefs").json()["prefs"]["theme"] == "dark"
    response = page.reload()
    assert response is not None and re.search(r'<html lang="en" data-theme="dark">', response.text())
    expect(page.get_by_role("combobox", name="Theme")).to_have_value("dark")

    # Back to the system's: the key is removed, and the page follows prefers-color-scheme.
    page.emulate_media(color_scheme="dark")
    with page.expect_response(re.compile(r"/api/chat/user/prefs$")):
        page.get_by_role("combobox", name="Theme").select_option("")
    assert "theme" not in person.api("GET", "/api/chat/user/prefs").json()["prefs"]
    expect(page.locator("html")).not_to_have_attribute("data-theme", re.compile("."))
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(17, 20, 24)"
    page.emulate_media(color_scheme="light")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"


@pytest.fixture(scope="module")
def demo_site(site: Site) -> Iterator[Site]:
    """The seeded demo chat app with tags on site-wide, as `make run` has it: a spotlight and a hero."""
    features = json.dumps({"promptInputFieldLabel": "Ask a question", "tags": {"enabled": True}})
    with contextlib.ExitStack() as stack:
        yield start_site({**site.env, "CHAT_SITE_FEATURES": features}, site.model, stack, seed=False)


def inside(page: Any, locator: Any, container: Any) -> bool:
    """Whether `locator` is wholly inside `container`'s box and the window."""
    box, frame = locator.bounding_box(), container.bounding_box()
    height = page.viewport_size["height"]
    return frame["y"] <= box["y"] and box["y"] + box["height"] <= min(frame["y"] + frame["height"], height) + 0.5


def test_a_conversation_takes_the_room_from_the_spotlight_and_the_hero(demo_site: Site, person_factory: Callable[..., Person]):
    person = person_factory(given_name="Ada", viewport={"width": 1280, "height": 800})
    person.site = demo_site
    page = person.open("/chat/demo/")
    spotlight_cards = page.locator("#spotlight-track")
    hero_body = page.locator(".hero .widget-body")
    expect(page.locator(".hero demo-welcome")).to_be_visible()
    expect(spotlight_cards).to_be_visible()
    shot(page, "room-welcome")

    page.get_by_role("textbox", name="Ask the demo assistant").fill("Show me a chart of this week's visitors")
    page.get_by_role("button", name="Send").click()
    answer = page.locator('[data-message-role="assistant"]').last
    chart = answer.locator(".widget-chart")
    expect(chart).to_be_visible()
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    # The spotlight keeps its header, the hero its bar; the chart answer is seen whole in 800 px.
    expect(spotlight_cards).to_be_hidden()
    expect(page.get_by_role("button", name="Spotlight")).to_be_visible()
    expect(hero_body).to_be_hidden()
    expect(page.locator(".hero .widget-chrome")).to_be_visible()
    page.wait_for_timeout(300)  # the chart's layout settles, the pane follows the answer
    assert inside(page, answer, page.locator(".messages")), "the whole chart answer is in view"
    shot(page, "room-conversation-800px")

    # The person opens the spotlight again in a conversation: kept in their prefs, and after a reload.
    with page.expect_response(re.compile(r"/api/chat/user/prefs$")):
        page.get_by_role("button", name="Spotlight").click()
    expect(spotlight_cards).to_be_visible()
    assert person.api("GET", "/api/chat/user/prefs").json()["prefs"]["shelf"] == {"spotlight": "shown", "hero": "collapsed"}
    page.reload()
    expect(page.locator('[data-message-role="assistant"] .widget-chart')).to_be_visible()
    expect(spotlight_cards).to_be_visible()
    expect(hero_body).to_be_hidden()

    # A new chat gives the welcome its room back.
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("[data-message-role]")).to_have_count(0)
    expect(hero_body).to_be_visible()
    expect(spotlight_cards).to_be_visible()


def test_a_conversations_menu_holds_rename_pin_share_and_delete(site: Site, person: Person):
    site.chat_app("pages-menu")
    page = person.open("/chat/pages-menu/")
    say(page, "A conversation about the menu")
    sidebar = page.get_by_role("navigation", name="Conversations")
    line = sidebar.locator(".session").first
    expect(line.get_by_role("button")).to_have_count(0)  # everything but the link waits in the menu
    more = sidebar.get_by_label(re.compile("More for .*menu"))
    more.click()
    names = [re.compile("Rename"), "Pin", "Share", re.compile("Delete")]
    for name in names:
        expect(line.get_by_role("button", name=name)).to_be_visible()
    shot(page, "comforts-conversation-menu")
    page.keyboard.press("Escape")  # closes the menu, focus back on its button
    expect(line.get_by_role("button", name="Pin")).to_be_hidden()
    expect(more).to_be_focused()
    more.click()
    page.locator(".messages").click()  # a click elsewhere closes it too
    expect(line.get_by_role("button", name="Pin")).to_be_hidden()


def test_the_demo_reads_well_in_the_dark_theme(demo_site: Site, person_factory: Callable[..., Person]):
    person = person_factory(given_name="Ada", viewport={"width": 1280, "height": 800})
    person.site = demo_site
    person.page.emulate_media(color_scheme="dark")
    page = person.open("/chat/demo/")
    expect(page.locator(".hero demo-welcome")).to_be_visible()
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(17, 20, 24)"
    shot(page, "comforts-demo-dark")
    page.get_by_role("textbox", name="Ask the demo assistant").fill("Show me a chart of this week's visitors")
    page.get_by_role("button", name="Send").click()
    expect(page.locator('[data-message-role="assistant"] .widget-chart')).to_be_visible()
    page.wait_for_timeout(300)  # the chart's first paint
    shot(page, "comforts-demo-chart-dark")


def test_edit_a_question_regenerate_an_answer_and_step_between_versions(site: Site, person: Person, model):
    site.chat_app("pages-branches")
    page = person.open("/chat/pages-branches/")
    say(page, "First question")
    say(page, "Second question about apples")
    questions = page.locator('[data-message-role="user"]')
    answers = page.locator('[data-message-role="assistant"]')
    expect(answers.last.get_by_role("button", name="Regenerate the answer")).to_be_visible()  # as it ends, no reload needed

    # Edit the second question: it is asked again as a second version, the first kept.
    questions.last.get_by_role("button", name="Edit the question").click()
    box = questions.last.get_by_role("textbox", name="Edited question")
    expect(box).to_have_value("Second question about apples")
    box.fill("Second question about pears")
    questions.last.get_by_role("button", name="Send").click()
    expect(answers.last).to_have_text(re.compile("You said: Second question about pears"))
    expect(questions.last.get_by_role("group", name="Versions of this question")).to_contain_text("2/2")
    expect(questions).to_have_count(2)
    shot(page, "branches-edited")
    turn = next(body for body in reversed(model.requests) if "pears" in str(body["messages"][-1].get("content")))
    assert "apples" not in str(turn["messages"]), "the model got the new branch's path only"

    # ‹ 1/2 ›: the first version, with the answer it had.
    questions.last.get_by_role("button", name="Previous version of this question").click()
    expect(questions.last).to_contain_text("Second question about apples")
    expect(answers.last).to_have_text(re.compile("You said: Second question about apples"))
    expect(questions.last.get_by_role("group", name="Versions of this question")).to_contain_text("1/2")

    # Regenerate that answer: a second version of it, the first kept.
    model.script([Reply(text="Apples, once more.", token_delay=0.01)])
    answers.last.get_by_role("button", name="Regenerate the answer").click()
    expect(answers.last).to_contain_text("Apples, once more.")
    versions = answers.last.get_by_role("group", name="Versions of this answer")
    expect(versions).to_contain_text("2/2")
    expect(questions.last).to_contain_text("Second question about apples")
    shot(page, "branches-regenerated")
    versions.get_by_role("button", name="Previous version of this answer").click()
    expect(answers.last).to_have_text(re.compile("You said: Second question about apples"))
    expect(answers.last.get_by_role("group", name="Versions of this answer")).to_contain_text("1/2")
    shot(page, "branches-stepped")

    # After a reload (nothing of this page load remembered), each version opens with what followed it.
    page.reload()
    expect(answers.last).to_contain_text("Apples, once more.")  # the newest message's branch
    questions.last.get_by_role("button", name="Next version of this question").click()
    expect(questions.last).to_contain_text("Second question about pears")
    expect(answers.last).to_have_text(re.compile("You said: Second question about pears"))
    questions.last.get_by_role("button", name="Previous version of this question").click()
    expect(questions.last).to_contain_text("Second question about apples")
    expect(answers.last).to_contain_text("Apples, once more.")  # its newest descendant, not the version alone
    shot(page, "branches-after-reload")
