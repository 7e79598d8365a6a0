"""A turn followed, stopped and decided from another server process than the one running it
(docs/api.md, "Resume, stop and approvals"): two platform processes sharing the test's database
and one Redis; a paused turn survives the restart of both."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from chat.models import ChatMessage, ToolApproval
from tests.conftest import bearer_token
from tests.factories import AgentFactory, ChatAppFactory, ToolDefinitionFactory
from tests.peers import Reply, ToolCall
from tests.servers import ServerProcess, asgi_server, database_url_of_test_db

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.django_db(transaction=True)]

ALICE = {"Authorization": f"Bearer {bearer_token('alice')}"}
BODY = {"chatAppId": "support", "agentId": "helper", "message": "Tell me a long story", "features": {}, "source": "user"}
WORDS = [f"word{n} " for n in range(60)]


@pytest.fixture
def env(redis_url: str, openai_server: Any, transactional_db: None) -> dict[str, str]:
    redis.Redis.from_url(redis_url).flushdb()  # the processes' cached users and definitions of an earlier test's database
    tool = ToolDefinitionFactory(tool_id="adder@1", approval={"required": True})
    ChatAppFactory(chat_app_id="support", agent=AgentFactory(agent_id="helper", foundation_model="openai:test-model", tool_ids=[tool.pk]))
    return {
        "DATABASE_URL": database_url_of_test_db(),
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "k",
        "CHAT_TITLE_MODEL": "offline",
        "LOG_LEVEL": "WARNING",
    }


def events_of(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """Each Server-Sent Event of a streamed response as it arrives: {id, event, data}."""
    fields: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "event" in fields:
                fields["data"] = json.loads(fields["data"])
                yield fields
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(": ")
            fields[name] = value


def start_turn(server: ServerProcess, count: int) -> list[dict[str, Any]]:
    """Start a turn on `server` and read its first `count` events, then leave (a reload)."""
    seen = []
    with (
        httpx.Client(base_url=server.url, headers=ALICE, timeout=30) as client,
        client.stream("POST", "/api/chat/converse", json=BODY, headers={"Accept": "text/event-stream"}) as response,
    ):
        assert response.status_code == 200, response.read()
        for event in events_of(response):
            seen.append(event)
            if len(seen) == count:
                break
    return seen


def follow(server: ServerProcess, session_id: str, last_event_id: str | None = None) -> list[dict[str, Any]]:
    headers = {"Accept": "text/event-stream", **({"Last-Event-ID": last_event_id} if last_event_id else {})}
    with (
        httpx.Client(base_url=server.url, headers=ALICE, timeout=60) as client,
        client.stream("GET", f"/api/chat/sessions/{session_id}/stream", headers=headers) as response,
    ):
        assert response.status_code == 200, response.read()
        return list(events_of(response))


def numbers(events: list[dict[str, Any]]) -> list[int]:
    return [int(event["id"].rsplit(":", 1)[1]) for event in events]


def test_a_turn_started_on_one_process_is_resumed_on_the_other_with_no_event_lost_or_repeated(env, openai_server):
    openai_server.script([Reply(chunks=WORDS, token_delay=0.03)])
    with asgi_server(env) as first, asgi_server(env) as second:
        seen = start_turn(first, 6)
        session_id = seen[0]["data"]["sessionId"]
        rest = follow(second, session_id, seen[-1]["id"])
        whole = follow(second, session_id)  # another tab, after the end: every event, replayed

    events = seen + rest
    assert numbers(events) == list(range(1, len(events) + 1))
    assert [event["id"] for event in whole] == [event["id"] for event in events]
    text = "".join(event["data"]["text"] for event in events if event["event"] == "delta")
    assert text == ChatMessage.objects.get(pk=seen[0]["data"]["messageId"]).message == "".join(WORDS)


def test_a_turn_running_on_one_process_is_stopped_from_the_other_within_two_seconds(env, openai_server):
    openai_server.script([Reply(chunks=WORDS * 10, token_delay=0.03)])  # eighteen seconds if nobody stops it
    with (
        asgi_server(env) as first,
        asgi_server(env) as second,
        httpx.Client(headers=ALICE, timeout=30) as client,
        client.stream("POST", f"{first.url}/api/chat/converse", json=BODY, headers={"Accept": "text/event-stream"}) as response,
    ):
        assert response.status_code == 200, response.read()
        events = events_of(response)
        session = next(events)["data"]
        next(events)
        asked = time.monotonic()
        stop = client.post(f"{second.url}/api/chat/sessions/{session['sessionId']}/stop", json={})
        assert stop.json() == {"success": True, "stopped": True}
        done = next(event for event in events if event["event"] == "done")
        assert time.monotonic() - asked < 2
    assert done["data"]["stopped"] is True
    stored = ChatMessage.objects.get(pk=session["messageId"])
    assert stored.stop_reason == "user" and stored.message == done["data"]["response"]


def test_an_approval_asked_on_one_process_is_decided_on_the_other_after_both_restarted(env, openai_server):
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 20, "b": 22})]), Reply(text="The sum is 42.")])
    with asgi_server(env) as first:
        events = start_turn(first, 1000)
    done = events[-1]["data"]
    assert done["status"] == "awaiting_approval"

    # Every process restarted: the pending call is in the database, not in any process's memory.
    with asgi_server(env), asgi_server(env) as second, httpx.Client(base_url=second.url, headers=ALICE, timeout=30) as client:
        path = f"/api/chat/sessions/{done['sessionId']}/approvals/{done['pendingApprovals'][0]}"
        with client.stream("POST", path, json={"decision": "approve"}, headers={"Accept": "text/event-stream"}) as response:
            going_on = list(events_of(response))

    final = going_on[-1]["data"] if going_on[-1]["event"] == "done" else next(e["data"] for e in going_on if e["event"] == "done")
    assert final["response"] == "The sum is 42."
    assert numbers(going_on)[0] == numbers(events)[-1] + 1, "the turn's events go on from where it paused"
    assert json.loads(openai_server.tool_results(1)[0][1]) == {"sum": 42}
    assert ChatMessage.objects.get(pk=done["messageId"]).message == "The sum is 42."
    assert ToolApproval.objects.get(pk=done["pendingApprovals"][0]).status == "approved"


def test_the_embedded_default_resumes_too(openai_server, transactional_db, migrated_sqlite: Path, tmp_path: Path):
    """One process on SQLite, no Redis: a reader that reloads resumes from the process's own store."""
    ChatAppFactory(chat_app_id="support", agent=AgentFactory(agent_id="helper", foundation_model="openai:test-model"))
    openai_server.script([Reply(chunks=WORDS, token_delay=0.03)])
    env = {"DATABASE_URL": database_url_of_test_db(), "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "k", "REDIS_URL": ""}
    with asgi_server({**env, "LOG_LEVEL": "WARNING"}) as only:
        seen = start_turn(only, 5)
        rest = follow(only, seen[0]["data"]["sessionId"], seen[-1]["id"])
    events = seen + rest
    assert numbers(events) == list(range(1, len(events) + 1))
    text = "".join(event["data"]["text"] for event in events if event["event"] == "delta")
    assert text == "".join(WORDS)
