"""A response streamed by one server process is retrieved and replayed from another (docs/doors.md,
"OpenAI Responses"): two platform processes sharing the test's database and one Redis, the official
SDK streaming for real over loopback."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import openai
import pytest
import redis

from chat.models import ChatMessage
from tests.conftest import bearer_token
from tests.factories import ChatAppFactory
from tests.peers import Reply
from tests.peers.redis_server import RedisProcess
from tests.servers import ServerProcess, asgi_server, database_url_of_test_db

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.django_db(transaction=True)]

WORDS = [f"word{n} " for n in range(100)]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The suite's Redis when it runs on one (CI's second pass), else a private one."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    server = RedisProcess(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def env(redis_url: str, openai_server: Any, transactional_db: None) -> dict[str, str]:
    redis.Redis.from_url(redis_url).flushdb()  # the processes' cached users and definitions of an earlier test's database
    ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="openai:test-model")
    return {
        "DATABASE_URL": database_url_of_test_db(),
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "k",
        "CHAT_TITLE_MODEL": "offline",
        "LOG_LEVEL": "WARNING",
    }


def sdk(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=bearer_token("alice"), max_retries=0, timeout=60)


def test_a_response_streaming_on_one_process_is_retrieved_and_replayed_on_the_other(env, openai_server):
    openai_server.script([Reply(chunks=WORDS, token_delay=0.03)])  # three seconds of streaming
    with asgi_server(env) as first, asgi_server(env) as second:
        seen = []
        with sdk(first).responses.create(model="support", input="Tell me a long story", stream=True) as stream:
            for event in stream:
                seen.append(event)
                if event.type == "response.output_text.delta" and len(seen) == 8:
                    break  # the client went away: the turn runs on
        response_id = seen[0].response.id

        running = sdk(second).responses.retrieve(response_id)
        rest = list(sdk(second).responses.retrieve(response_id, stream=True, starting_after=seen[-1].sequence_number))
        again = sdk(second).responses.retrieve(response_id)

    assert running.status == "in_progress"
    assert running.output_text.startswith("word0 word1 word2 word3 ")
    events = seen + rest
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == events[-1].response.output_text == again.output_text == "".join(WORDS)
    assert ChatMessage.objects.get(pk=response_id).message == "".join(WORDS)
    assert again.status == "completed"
