"""Usage limits hold across server processes (docs/api.md, "Usage limits"): two platform processes
sharing the test's database, a user's turns alternating between them. A turn already running when
the limit is reached finishes; the next one, on either process, is refused before the model is
asked."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from chat.models import ChatMessage, UsageCounter
from tests.conftest import bearer_token
from tests.factories import ChatAppFactory
from tests.peers import Reply
from tests.servers import ServerProcess, asgi_server, database_url_of_test_db

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.django_db(transaction=True)]

ALICE = {"Authorization": f"Bearer {bearer_token('alice')}"}
LIMIT = 30  # tokens a day, site-wide: two turns of the scripted model (10 + 5 tokens each)


def body(message: str) -> dict[str, Any]:
    return {"chatAppId": "support", "agentId": "helper", "message": message, "features": {}, "source": "user"}


@pytest.fixture
def env(openai_server: Any, transactional_db: None) -> dict[str, str]:
    ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="openai:test-model")

    def reply(request: dict[str, Any]) -> Reply:
        asked = request["messages"][-1]["content"]
        # "slow": long enough for another turn to start and finish while it streams.
        return Reply(chunks=[f"w{n} " for n in range(40)], token_delay=0.05) if "slow" in str(asked) else Reply(text="Quick answer.")

    openai_server.script(reply)
    return {
        "DATABASE_URL": database_url_of_test_db(),
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "k",
        "CHAT_TITLE_MODEL": "offline",
        "CHAT_SITE_FEATURES": json.dumps({"usageLimits": {"enabled": True, "perUser": {"daily": {"tokens": LIMIT}}}}),
        "LOG_LEVEL": "WARNING",
    }


def converse(server: ServerProcess, message: str) -> httpx.Response:
    return httpx.post(f"{server.url}/api/chat/converse", json=body(message), headers=ALICE, timeout=30)


def test_the_limit_holds_across_processes_and_a_running_turn_finishes_past_it(env, openai_server):
    with asgi_server(env) as first, asgi_server(env) as second:
        assert converse(first, "one").status_code == 200  # 15 tokens of 30
        with (
            httpx.Client(headers=ALICE, timeout=30) as client,
            client.stream("POST", f"{first.url}/api/chat/converse", json=body("slow"), headers={"Accept": "text/event-stream"}) as slow,
        ):
            assert slow.status_code == 200
            lines = slow.iter_lines()
            next(line for line in lines if line == "event: delta")  # the slow turn is streaming its answer
            assert converse(second, "two").status_code == 200  # 30 of 30: the limit is reached meanwhile
            rest = list(lines)
        assert "event: done" in rest and "event: error" not in rest  # the running turn finished past the limit
        asked = len(openai_server.requests)
        assert asked == 3

        refusals = [converse(server, "three") for server in (first, second)]

    for refused in refusals:
        assert refused.status_code == 429, refused.text
        assert refused.json()["code"] == "USAGE_LIMIT_EXCEEDED"
        assert f"daily limit of {LIMIT} tokens" in refused.json()["error"]
        assert int(refused.headers["Retry-After"]) > 0
    assert len(openai_server.requests) == asked  # the refused turns never reached the model
    site_today = UsageCounter.objects.get(user_id="alice", chat_app_id="", period="day")
    assert site_today.tokens == 3 * 15  # every process's turns counted once, the running one's too
    answers = ChatMessage.objects.filter(source="assistant")
    assert answers.count() == 3 and not answers.filter(error__isnull=False).exists()
