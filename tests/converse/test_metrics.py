"""Prometheus metrics at /metrics (docs/deploy.md, "Metrics"): what a turn moves, and who may read them."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from prometheus_client.parser import text_string_to_metric_families

from agents.models import AgentDefinition
from tests.asgi_client import AsgiClient
from tests.conftest import bearer_token
from tests.converse.helpers import converse
from tests.factories import ToolDefinitionFactory
from tests.peers import Reply, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)


async def scrape(**headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples of /metrics as {(name, labels): value}, read as an admin."""
    response = await AsgiClient().request(
        "GET", "/metrics", headers=headers or {"Authorization": f"Bearer {bearer_token('ops', admin=True)}"}
    )
    assert response.status_code == 200, response.content
    assert response["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def moved(before: dict, after: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def test_a_turn_with_a_tool_call_moves_the_request_turn_model_token_and_tool_metrics(app, async_client_for, openai_server):
    tool = await sync_to_async(ToolDefinitionFactory)(tool_id="adder@1")
    await AgentDefinition.objects.filter(pk="helper").aupdate(tool_ids=[tool.tool_id])
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})], prompt_tokens=7, completion_tokens=2),
            Reply(text="5.", prompt_tokens=11, completion_tokens=3),
        ]
    )
    before = await scrape()

    response = await converse(async_client_for("alice"))
    assert response.status_code == 200, response.json()
    after = await scrape()

    assert moved(before, after, "chat_http_requests_total", endpoint="converse", method="POST", status="200") == 1
    assert moved(before, after, "chat_turns_total", outcome="done") == 1
    assert moved(before, after, "chat_turn_duration_seconds_count", outcome="done") == 1
    assert moved(before, after, "chat_model_calls_total", stage="model", model="openai:test-model") == 1
    assert moved(before, after, "chat_model_call_duration_seconds_count", stage="model") == 1
    assert moved(before, after, "chat_model_tokens_total", model="openai:test-model", direction="input") == 18
    assert moved(before, after, "chat_model_tokens_total", model="openai:test-model", direction="output") == 5
    assert moved(before, after, "chat_tool_calls_total", outcome="ok") == 1
    assert moved(before, after, "chat_tool_call_duration_seconds_count", outcome="ok") == 1


async def test_a_failed_turn_is_counted_as_failed(app, async_client_for, openai_server):
    openai_server.script([Reply(status=400)])
    before = await scrape()
    await converse(async_client_for("alice"))
    after = await scrape()
    assert moved(before, after, "chat_turns_total", outcome="failed") == 1


async def test_metrics_are_refused_to_the_public_and_to_non_admins(settings):
    settings.CHAT_METRICS_TOKEN = "scraper-secret"
    anonymous = await AsgiClient().request("GET", "/metrics")
    forged = await AsgiClient().request("GET", "/metrics", headers={"Authorization": "Bearer not-the-token"})
    user = await AsgiClient().request("GET", "/metrics", headers={"Authorization": f"Bearer {bearer_token('alice')}"})
    assert anonymous.status_code == 401 and anonymous["www-authenticate"].startswith("Bearer")
    assert forged.status_code == 401
    assert user.status_code == 403
    assert b"chat_turns_total" not in anonymous.content + forged.content + user.content


async def test_the_scraper_token_reads_the_metrics(settings):
    settings.CHAT_METRICS_TOKEN = "scraper-secret"
    samples = await scrape(Authorization="Bearer scraper-secret")
    assert any(name.startswith("chat_http_requests_total") for name, _ in samples)


async def test_metrics_switched_off_count_nothing_and_are_not_served(app, async_client_for, openai_server, settings):
    openai_server.script([Reply(text="Fine.")])
    before = await scrape()
    settings.CHAT_METRICS_ENABLED = False
    await converse(async_client_for("alice"))
    hidden = await AsgiClient().request("GET", "/metrics", headers={"Authorization": f"Bearer {bearer_token('ops', admin=True)}"})
    settings.CHAT_METRICS_ENABLED = True
    after = await scrape()
    assert hidden.status_code == 404
    assert moved(before, after, "chat_turns_total", outcome="done") == 0
    assert moved(before, after, "chat_http_requests_total", endpoint="converse", method="POST", status="200") == 0
