"""The offline model shows the demo's widgets (docs/widgets.md): asked for a widget a tag's instructions
describe, it answers with that tag's example markup, so the demo shows widgets with no network."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command

from tests.converse.helpers import converse, converse_sse

pytestmark = pytest.mark.django_db(transaction=True)

CHART = re.compile(r'<demo\.chart type="bar" title="Visitors this week">(\{.*?\})</demo\.chart>', re.DOTALL)


@pytest.fixture
def demo(transactional_db, settings):
    settings.CHAT_SITE_FEATURES = {"tags": {"enabled": True}}
    call_command("seed_demo", stdout=io.StringIO())


def demo_body(message: str) -> dict:
    return {"chatAppId": "demo", "agentId": "demo-assistant", "message": message}


async def test_asked_for_a_chart_the_offline_model_answers_the_demo_chart_tag(demo, async_client_for):
    answer = (await converse(async_client_for("alice"), **demo_body("Show me a chart of this week's visitors"))).json()
    assert answer["success"] is True, answer
    found = CHART.search(answer["response"])
    assert found, answer["response"]
    assert '"series": [{"label": "Visitors", "data": [120, 150, 90, 180, 160]}]' in found.group(1)


async def test_the_chart_tag_streams_in_deltas_that_add_up_to_it(demo, async_client_for):
    _, events = await converse_sse(async_client_for("alice"), **demo_body("Charts please"))
    text = "".join(data["text"] for name, data in events if name == "delta")
    assert CHART.search(text), text
    assert len([name for name, _ in events if name == "delta"]) > 3  # split across deltas, as a model streams


async def test_asked_for_a_counter_or_a_suggestion_it_answers_those_tags(demo, async_client_for):
    client = async_client_for("alice")
    counter = (await converse(client, **demo_body("Show me a counter"))).json()["response"]
    assert '<demo.counter title="Your counter"></demo.counter>' in counter
    suggestion = (await converse(client, **demo_body("Give me a suggestion"))).json()["response"]
    assert '<demo.suggestion text="What time is it in Tokyo?"></demo.suggestion>' in suggestion
    weather = (await converse(client, **demo_body("What's the weather like?"))).json()["response"]
    assert '<demo.weather-card city="Paris"></demo.weather-card>' in weather


async def test_with_the_sites_tags_feature_off_no_tag_is_emitted(demo, async_client_for, settings):
    settings.CHAT_SITE_FEATURES = {}
    answer = (await converse(async_client_for("alice"), **demo_body("Show me a chart"))).json()
    assert "<demo.chart" not in answer["response"]
    assert answer["response"].startswith("You said:")


async def test_a_tag_the_model_may_not_emit_is_never_offered(demo, async_client_for):
    # demo.tips and demo.welcome are spotlight/hero widgets, not for the model: no instructions, no tag.
    answer = (await converse(async_client_for("alice"), **demo_body("Any tips? Welcome me"))).json()
    assert "<demo.tips" not in answer["response"] and "<demo.welcome" not in answer["response"]
