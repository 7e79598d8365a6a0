"""Fixtures of the doors' tests: the scripted model server, a chat app and its agent, and the
official OpenAI SDK talking to the whole ASGI application."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import openai
import pytest

from chatplatform.asgi import application
from tests.conftest import bearer_token
from tests.factories import ChatAppFactory
from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)
from tests.peers.redis_server import redis_url  # noqa: F401  (a pytest fixture, registered by importing it here)

MODEL = "openai:test-model"
BASE_URL = "http://testserver"


@pytest.fixture
def app(transactional_db: None) -> Any:
    """A chat app whose agent talks to the scripted server (`openai:test-model`)."""
    return ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model=MODEL)


@pytest.fixture(autouse=True)
def _site_features(settings: Any) -> None:
    settings.CHAT_SITE_FEATURES = {}
    settings.CHAT_TITLE_MODEL = "offline"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the whole ASGI application, as uvicorn serves it."""
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url=BASE_URL) as client:
        yield client


@pytest.fixture
def openai_for(transactional_db: None, http: httpx.AsyncClient) -> Callable[..., openai.AsyncOpenAI]:
    """`openai_for("alice")`: the official SDK with alice's bearer token as its API key; `api_key=` for another."""

    def make(user_id: str = "alice", *, api_key: str | None = None, **claims: Any) -> openai.AsyncOpenAI:
        key = api_key if api_key is not None else bearer_token(user_id, **claims)
        return openai.AsyncOpenAI(base_url=f"{BASE_URL}/v1", api_key=key, http_client=http, max_retries=0)

    return make


def authorized(user_id: str = "alice") -> dict[str, str]:
    return {"Authorization": f"Bearer {bearer_token(user_id)}"}
