"""The demo's widgets in Chromium (docs/widgets.md): with the site's tags feature on (as `make run` sets
it), the demo chat app shows its spotlight and hero web components from the widget store, and the
offline model's answers become a chart, a counter that remembers, a suggestion and a weather card.
No network: the scripts come from the platform's database-backed store."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.pages.conftest import Person, Site, shot, start_site


@pytest.fixture(scope="module")
def demo_site(site: Site) -> Iterator[Site]:
    """A server of its own on the same (seeded) database, with tags on site-wide as in `make run`."""
    features = json.dumps({"promptInputFieldLabel": "Ask a question", "tags": {"enabled": True}})
    with contextlib.ExitStack() as stack:
        yield start_site({**site.env, "CHAT_SITE_FEATURES": features}, site.model, stack, seed=False)


@pytest.fixture
def visitor(person_factory: Callable[..., Person], demo_site: Site) -> Person:
    person = person_factory(given_name="Ada")
    person.site = demo_site
    return person


def ask(page: Any, text: str) -> Any:
    answers = page.locator('[data-message-role="assistant"]')
    before = answers.count()
    page.get_by_role("textbox", name="Ask the demo assistant").fill(text)
    page.get_by_role("button", name="Send").click()
    expect(answers).to_have_count(before + 1)
    return answers.nth(before)


def test_the_demo_spotlight_and_hero_come_from_the_store(visitor: Person):
    page = visitor.open("/chat/demo/")
    expect(page.locator(".spotlight-card demo-tips")).to_have_count(1)
    expect(page.locator("demo-tips").get_by_role("button", name="Charts")).to_be_visible()
    expect(page.locator(".spotlight-card demo-weather-card")).to_contain_text("Demo data, made up offline.")
    expect(page.locator(".hero demo-welcome")).to_contain_text("Welcome, Ada.")
    page.locator("demo-tips").get_by_role("button", name="A counter that remembers").click()
    expect(page.get_by_role("textbox", name="Ask the demo assistant")).to_have_value("Show me a counter")
    shot(page, "demo-widgets-spotlight-hero")


def test_the_offline_model_answers_with_a_chart_a_suggestion_and_a_weather_card(visitor: Person):
    page = visitor.open("/chat/demo/")
    chart = ask(page, "Show me a chart of this week's visitors")
    expect(chart.locator(".widget-chart")).to_be_visible()
    expect(chart).not_to_contain_text("<demo.chart")
    suggestion = ask(page, "Give me a suggestion")
    expect(suggestion.get_by_role("button", name="What time is it in Tokyo?")).to_be_visible()
    weather = ask(page, "What is the weather like?")
    expect(weather.locator("demo-weather-card")).to_contain_text("°C")
    shot(page, "demo-widgets-answers")


def test_the_counter_keeps_its_number_across_sessions(visitor: Person):
    page = visitor.open("/chat/demo/")
    counter = ask(page, "Show me a counter").locator("demo-counter")
    expect(counter.locator("output")).to_have_text("0")
    counter.get_by_role("button", name="Add one").click()
    counter.get_by_role("button", name="Add one").click()
    counter.get_by_role("button", name="Add one").click()
    expect(counter.locator("output")).to_have_text("3")
    saved = visitor.api("GET", "/api/chat/widget-data/demo/counter")
    for _ in range(20):  # the widget's POST may still be on its way
        if (saved.json().get("data") or {}).get("count") == 3:
            break
        page.wait_for_timeout(100)
        saved = visitor.api("GET", "/api/chat/widget-data/demo/counter")
    assert saved.json()["data"] == {"count": 3}

    page = visitor.open("/chat/demo/")  # a new conversation
    counter = ask(page, "Show me my counter").locator("demo-counter")
    expect(counter.locator("output")).to_have_text("3")
    shot(page, "demo-widgets-counter")
