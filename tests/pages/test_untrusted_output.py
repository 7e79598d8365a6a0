"""Model output is untrusted: nothing it carries runs, streamed or stored (docs/decisions.md, "The chat page")."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot
from tests.peers.openai_server import Reply

# Each payload sets a flag when it runs; none may.
HOSTILE = (
    "Look: <img src=x onerror=\"window.__pwned='img'\"> and <script>window.__pwned='script'</script>\n\n"
    "[click me](javascript:window.__pwned='link') and <a href=\"javascript:window.__pwned='raw-link'\">raw link</a>\n\n"
    "<b onclick=\"window.__pwned='click'\" onmouseover=\"window.__pwned='hover'\">bold raw html</b>\n\n"
    "<iframe src=\"javascript:window.__pwned='iframe'\"></iframe><svg><script>window.__pwned='svg'</script></svg>\n\n"
    '<form action="https://evil.example"><input name=q value=steal></form>'
    "<details open ontoggle=\"window.__pwned='toggle'\">x</details>\n\n"
    '![tracker](https://evil.example/pixel.png) <demo.chart onload="window.__pwned=\'tag\'">{"values": [1]}</demo.chart>\n\n'
    "The end."
)


def assert_inert(page, answer) -> None:
    page.wait_for_timeout(300)  # an onerror fires once the image has failed to load
    assert page.evaluate("window.__pwned") is None
    answer.get_by_text("click me").click()
    answer.get_by_text("raw link").click()
    answer.get_by_text("bold raw html").hover()
    answer.get_by_text("bold raw html").click()
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned") is None
    html = answer.inner_html()
    for forbidden in ("<script", "onerror", "onclick", "onmouseover", "ontoggle", "javascript:", "<iframe", "<form", "<input"):
        assert forbidden not in html, forbidden
    assert answer.get_by_text("bold raw html").evaluate("node => node.tagName") == "B"  # sanitized markup stays
    expect(answer).to_contain_text("The end.")


def ask(person: Person, chat_app_id: str, question: str):
    page = person.page
    person.open(f"/chat/{chat_app_id}/")
    page.get_by_role("textbox", name="Ask a question").fill(question)
    page.get_by_role("button", name="Send").click()
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    return answer


def test_hostile_markup_in_an_answer_never_runs_streamed_or_stored_even_without_the_csp(site: Site, model, person_factory):
    """The sanitizer alone (the browser told to ignore the page's Content-Security-Policy)."""
    site.chat_app("pages-hostile")
    model.script([Reply(text=HOSTILE, token_delay=0.01)])
    person = person_factory(bypass_csp=True)
    answer = ask(person, "pages-hostile", "Show me something")
    assert_inert(person.page, answer)
    shot(person.page, "untrusted-output")

    person.page.reload()
    stored = person.page.locator('[data-message-role="assistant"]').last
    expect(stored).to_contain_text("The end.")
    assert_inert(person.page, stored)


def test_the_page_policy_keeps_images_of_other_hosts_out(site: Site, model, person: Person):
    site.chat_app("pages-hostile-csp")
    model.script([Reply(text=HOSTILE, token_delay=0.01)])
    refusals: list[str] = []  # why each request for the other host's image failed
    person.page.on("requestfailed", lambda request: refusals.append(request.failure) if "evil.example" in request.url else None)
    response = person.page.goto(f"{site.url}/chat/pages-hostile-csp/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self' 'nonce-" in policy and "img-src 'self' data: blob:" in policy and "frame-ancestors 'none'" in policy
    answer = ask(person, "pages-hostile-csp", "Show me something")
    assert_inert(person.page, answer)
    assert refusals and set(refusals) == {"csp"}, refusals


def test_a_message_of_the_person_is_shown_as_text(site: Site, model, person: Person):
    site.chat_app("pages-own-text")
    page = person.page
    person.open("/chat/pages-own-text/")
    typed = "<img src=x onerror=\"window.__pwned='mine'\"> **not bold**"
    page.get_by_role("textbox", name="Ask a question").fill(typed)
    page.keyboard.press("Enter")
    expect(page.locator('[data-message-role="user"]')).to_have_text(typed)
    expect(page.locator('[data-message-role="assistant"]')).to_have_attribute("data-message-id", re.compile(".+"))
    assert page.evaluate("window.__pwned") is None
