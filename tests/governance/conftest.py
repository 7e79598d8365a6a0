"""Fixtures of these tests: the scripted model server, and a client of the whole ASGI application."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.asgi_client import AsgiClient
from tests.conftest import bearer_token
from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)
from tests.peers.redis_server import redis_url  # noqa: F401  (a pytest fixture, registered by importing it here)


@pytest.fixture
def async_client_for(transactional_db: None) -> Callable[..., AsgiClient]:
    """A client of the whole ASGI application with a user's bearer token, as in production."""

    def make(user_id: str = "alice", *, admin: bool = False, **claims: Any) -> AsgiClient:
        return AsgiClient(AUTHORIZATION=f"Bearer {bearer_token(user_id, admin=admin, **claims)}")

    return make


@pytest.fixture(autouse=True)
def chat_files(settings: Any, tmp_path: Path) -> Path:
    """The folder the `chat_files` storage keeps file bytes in for the test: each file one entry."""
    settings.STORAGES = {
        **settings.STORAGES,
        "chat_files": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": tmp_path}},
    }
    return tmp_path
