"""An answer from a knowledge base shows its sources under it, numbered as the model cited them,
as text (docs/api.md, "Knowledge bases"), when it streams and after a reload."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.pages.conftest import MODEL, Person, Site, shot
from tests.peers import Reply, ToolCall


def test_an_answer_shows_the_knowledge_base_results_it_cites(site: Site, model, person: Person):
    base = {"knowledgeBaseId": "pages-handbook", "name": "Handbook", "description": "The handbook."}
    assert site.api("POST", "/api/chat-admin/knowledge-base", json={"knowledgeBase": base}).status_code == 200
    document = {
        "title": "Docks <b>& hours</b>",
        "text": "Dock seven opens at six on Saturdays.",
        "sourceUrl": "https://intranet.example/docks",
    }
    assert site.api("POST", "/api/chat-admin/knowledge-base/pages-handbook/documents", json={"document": document}).status_code == 200
    agent = {"agentId": "pages-cited", "basePrompt": "Answer from the handbook.", "toolIds": [], "foundationModel": MODEL}
    agent["knowledgeBases"] = [{"id": "pages-handbook"}]
    assert site.api("POST", "/api/chat-admin/agent", json={"agent": agent}).status_code == 200
    site.chat_app("pages-cited", agentId="pages-cited")
    model.script(
        [Reply(tool_calls=[ToolCall("search_pages_handbook", {"query": "dock Saturday"})]), Reply(text="Dock seven, from six [1].")]
    )

    page = person.open("/chat/pages-cited/")
    page.get_by_role("textbox", name="Ask a question").fill("When does the dock open on Saturday?")
    page.get_by_role("button", name="Send").click()
    answer = page.locator('[data-message-role="assistant"]').last
    expect(answer).to_have_attribute("data-message-id", re.compile(".+"))
    sources = answer.locator(".citations")
    expect(sources.locator("summary")).to_have_text("Sources (1)")
    sources.locator("summary").click()
    expect(sources.get_by_role("link", name="Docks <b>& hours</b>")).to_have_attribute("href", "https://intranet.example/docks")
    expect(sources.locator("blockquote")).to_contain_text("Dock seven opens at six on Saturdays.")
    shot(page, "citations")

    page.reload()
    expect(page.locator('[data-message-role="assistant"]').last.locator(".citations summary")).to_have_text("Sources (1)")
