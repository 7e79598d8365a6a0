"""The chat page's everyday comforts (docs/api.md, "The chat page"): copying an answer and a code
block, code highlighted by highlight.js, light and dark themes kept in the person's prefs."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot
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
    expect(answer.get_by_role("button", name="Copy the answer")).to_have_text("Copied")
    expect(answer.locator(".message-footer").get_by_role("status")).to_have_text("Copied to the clipboard")
    assert page.evaluate("navigator.clipboard.readText()") == ANSWER

    answer.get_by_role("button", name="Copy the python code").click()
    expect(answer.get_by_role("button", name="Copy the python code")).to_have_text("Copied")
    code = ANSWER.split("```python\n")[1].split("```")[0]
    assert page.evaluate("navigator.clipboard.readText()") == code
    shot(page, "comforts-copied")


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
