"""The Django admin's editors in Chromium: what is typed in a JSON editor is what the
form receives, so malformed JSON is refused on its field with the text kept; inline code is
edited with highlighting. The screenshots (screenshots/admin-*.png) are for people to look at."""

from __future__ import annotations

from typing import Any

from tests.pages.conftest import Site, shot

AGENT_FORM = "/admin/agents/agentdefinition/demo-assistant/change/"


def staff_page(browser: Any, site: Site) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(15000)
    page = context.new_page()
    page.goto(f"{site.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "admin-demo")  # the demo admin seed_demo created
    page.click("input[type=submit]")
    page.wait_for_url(f"{site.url}/admin/")
    return page


def test_malformed_json_typed_in_the_editor_is_refused_on_its_field_and_kept(browser, site):
    page = staff_page(browser, site)
    page.goto(site.url + AGENT_FORM)
    editor = page.locator(".field-custom .ace_text-input")
    editor.focus()
    page.keyboard.press("Control+A")
    page.keyboard.type('{"team": ')
    page.click("input[name=_save]")
    page.wait_for_load_state()

    assert page.locator(".field-custom .errorlist").inner_text() == "Enter a valid JSON."
    assert page.locator("textarea[name=custom]").input_value().startswith('{"team": ')
    agent = site.api("GET", "/api/chat-admin/agent/demo-assistant").json()["agent"]
    assert agent.get("custom") is None, "nothing was saved"
    page.locator(".field-custom").scroll_into_view_if_needed()
    shot(page, "admin-agent-json-error")
    page.context.close()


def test_agent_and_tool_forms_show_the_tool_picker_help_texts_and_the_code_editor(browser, site):
    page = staff_page(browser, site)
    page.goto(site.url + AGENT_FORM)
    assert page.locator(".field-foundation_model .help").inner_text().startswith("offline or <provider>:<model>")
    assert page.locator("select#id_tool_ids_to option").all_inner_texts() == ["current-time@1 (current_time)", "word-count@1 (word_count)"]
    shot(page, "admin-agent-form")

    page.goto(f"{site.url}/admin/tools/tooldefinition/word-count@1/change/")
    code = page.locator(".field-code .CodeMirror")
    assert code.is_visible()
    assert page.locator(".field-code .cm-keyword").first.inner_text() in {"async", "const", "return"}, "the code is highlighted"
    code.scroll_into_view_if_needed()
    shot(page, "admin-tool-form")
    page.context.close()


def test_the_admin_pages_and_their_editors_keep_to_their_content_security_policy(browser, site):
    page = staff_page(browser, site)
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None)
    for path in ("/admin/", AGENT_FORM, "/admin/tools/tooldefinition/word-count@1/change/", "/admin/chat/chatsession/"):
        response = page.goto(site.url + path)
        assert "img-src 'self' data:" in response.headers["content-security-policy"]
        page.wait_for_load_state("networkidle")
    editor = page.goto(site.url + AGENT_FORM) and page.locator(".field-custom .ace_text-input")
    editor.focus()
    page.keyboard.type('{"team": 1}')  # the editor's syntax check runs in its worker
    page.wait_for_timeout(500)
    assert violations == []
    page.context.close()
