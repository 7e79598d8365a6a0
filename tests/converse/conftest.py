"""Fixtures of the converse tests: the scripted model server, a chat app and its agent, clients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.asgi_client import AsgiClient
from tests.conftest import bearer_token
from tests.factories import ChatAppFactory
from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)

MODEL = "openai:test-model"


@pytest.fixture
def app(transactional_db: None) -> Any:
    """A chat app whose agent talks to the scripted server (`openai:test-model`)."""
    return ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model=MODEL)


@pytest.fixture
def async_client_for(transactional_db: None) -> Callable[..., AsgiClient]:
    """A client of the whole ASGI application with a user's bearer token: the converse endpoint serves it, as in production."""

    def make(user_id: str = "alice", *, admin: bool = False, **claims: Any) -> AsgiClient:
        return AsgiClient(AUTHORIZATION=f"Bearer {bearer_token(user_id, admin=admin, **claims)}")

    return make


@pytest.fixture(autouse=True)
def _site_features(settings: Any) -> None:
    settings.CHAT_SITE_FEATURES = {}
    settings.CHAT_SELECTION_MODEL = MODEL
    settings.CHAT_VERIFICATION_MODEL = MODEL
    settings.CHAT_TITLE_MODEL = "offline"
