"""Shared fixtures: API clients that authenticate the way frontends do, and a clean cache."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from chat.models import forget_local_users
from chatplatform import generations
from chatplatform.api.authentication import sign_token


def bearer_token(user_id: str, *, admin: bool = False, expires_in: int = 3600, **claims: Any) -> str:
    """A token like `manage.py issue_token` signs: `sub` plus optional profile claims."""
    now = int(time.time())
    payload: dict[str, Any] = {"sub": user_id, "iat": now, "exp": now + expires_in, **claims}
    if admin:
        payload["roles"] = [*payload.get("roles", []), "chat-admin"]
    return sign_token(payload)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """On SQLite the test database is a file, not shared memory, so that real worker and server
    processes (tests/events) can share it, as they share PostgreSQL's. As fast here as memory."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


@pytest.fixture(autouse=True)
def _clean_cache() -> None:
    """Rate-limit counters and cached users and definitions must not leak between tests."""
    cache.clear()
    forget_local_users()
    generations.forget_local()


@pytest.fixture
def client_for(db: None) -> Callable[..., APIClient]:
    """`client_for("alice")` → an APIClient sending alice's bearer token; `admin=True` for an admin."""

    def make(user_id: str, *, admin: bool = False, **claims: Any) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer_token(user_id, admin=admin, **claims)}")
        return client

    return make


@pytest.fixture
def user_client(client_for: Callable[..., APIClient]) -> APIClient:
    return client_for("alice")


@pytest.fixture
def admin_client(client_for: Callable[..., APIClient]) -> APIClient:
    return client_for("root-admin", admin=True)


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


def assert_error(response: Any, status: int, code: str | None = None, *, mentions: str | None = None) -> dict[str, Any]:
    """The response is SPEC.md's failure envelope with this status (and code, and wording)."""
    body = response.json()
    assert response.status_code == status, body
    assert body["success"] is False, body
    assert isinstance(body["error"], str) and body["error"], body
    assert set(body) <= {"success", "error", "code"}, body
    if code is not None:
        assert body.get("code") == code, body
    if mentions is not None:
        assert mentions in body["error"], body
    return body
