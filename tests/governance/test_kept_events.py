"""A deleted conversation's kept stream events go with it (docs/data.md): the events a turn keeps
in Redis for resuming (`chat:turn:<messageId>`, `chat:turns:session:<sessionId>`) are deleted with
the session, from the server process that deletes it and from a command's."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import redis

from tests.conftest import bearer_token
from tests.factories import ChatAppFactory
from tests.peers import Reply
from tests.servers import asgi_server, database_url_of_test_db, manage

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.django_db(transaction=True)]

ALICE = {"Authorization": f"Bearer {bearer_token('alice')}"}
BODY = {"chatAppId": "support", "agentId": "helper", "message": "Hello", "features": {}, "source": "user"}


@pytest.fixture
def env(redis_url: str, openai_server: Any, transactional_db: None) -> dict[str, str]:
    redis.Redis.from_url(redis_url).flushdb()
    ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="openai:test-model")
    openai_server.script(lambda request: Reply(text="Kept for resuming."))
    return {
        "DATABASE_URL": database_url_of_test_db(),
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "k",
        "CHAT_TITLE_MODEL": "offline",
        "LOG_LEVEL": "WARNING",
    }


def streamed_turn(url: str) -> dict[str, str]:
    response = httpx.post(f"{url}/api/chat/converse", json=BODY, headers={**ALICE, "Accept": "text/event-stream"}, timeout=30)
    assert response.status_code == 200, response.text
    done = [line for line in response.text.splitlines() if line.startswith("data: ") and '"messageId"' in line][-1]
    return httpx.Response(200, content=done.removeprefix("data: ")).json()


def test_deleting_a_conversation_or_its_user_drops_its_kept_events_from_redis(env, redis_url):
    store = redis.Redis.from_url(redis_url)
    with asgi_server(env) as server:
        first, second = streamed_turn(server.url), streamed_turn(server.url)
        keys = {f"chat:turn:{first['messageId']}", f"chat:turns:session:{first['sessionId']}"}
        assert all(store.exists(key) for key in keys)

        deleted = httpx.delete(f"{server.url}/api/chat/sessions/{first['sessionId']}", headers=ALICE, timeout=10)

        assert deleted.json() == {"success": True}
        assert not any(store.exists(key) for key in keys)
        assert store.exists(f"chat:turn:{second['messageId']}")  # the other conversation's are kept

    manage(env, "erase_user", "alice")

    assert not store.exists(f"chat:turn:{second['messageId']}") and not store.exists(f"chat:turns:session:{second['sessionId']}")
