"""Shared fixtures: API clients that authenticate the way frontends do, and a clean cache."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.test import Client
from rest_framework.test import APIClient

from chat.users.models import ChatUser, forget_local_users
from chatplatform import db, generations
from chatplatform.api.authentication import sign_token
from chatplatform.llm import http


class _Loop(asyncio.SelectorEventLoop):
    """A test's event loop closes the model client's session of its own before it closes: a
    session left to the garbage collector logs "Unclosed client session" long after its test."""

    def close(self) -> None:
        # Not when the garbage collector closes a forgotten loop while another one runs.
        if not self.is_closed() and not self.is_running() and asyncio._get_running_loop() is None:
            self.run_until_complete(http.close())
        super().close()


class _LoopPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return _Loop()


asyncio.set_event_loop_policy(_LoopPolicy())
# The offline model answers at once in tests, here and in the platform processes they start.
os.environ.setdefault("CHAT_OFFLINE_TOKEN_DELAY_MS", "0")
settings.CHAT_OFFLINE_TOKEN_DELAY_MS = int(os.environ["CHAT_OFFLINE_TOKEN_DELAY_MS"])  # loaded before this file


# `make test`'s workers take a file at a time (tests/pages as one unit: its site and browser are
# the package's), in this order: the longest first, so that the two workers finish together
# (docs/decisions.md, "The test suite"). A unit not listed comes after, in collection order.
LONGEST_UNITS = [
    "tests/pages",
    "tests/chatplatform/test_schemathesis.py",
    "tests/doors/test_agui.py",
    "tests/chatplatform/test_durable_turns_across_processes.py",
    "tests/chatplatform/test_access_rule_budget.py",
    "tests/chatplatform/test_faults_of_a_running_platform.py",
    "tests/chatplatform/test_access_matrix.py",
    "tests/chatplatform/test_asgi_server.py",
    "tests/telemetry/test_traces.py",
    "tests/doors/test_mcp.py",
    "tests/doors/test_a2a.py",
    "tests/doors/test_responses_across_processes.py",
    "tests/chat/test_web_component_bombs.py",
    "tests/converse/test_outbound_proxy.py",
    "tests/chat/test_seed_demo.py",
    "tests/directives/test_write_api.py",
    "tests/chat/test_demo_widgets.py",
    "tests/chatplatform/test_signin_throttle.py",
    "tests/chatplatform/test_settings.py",
    "tests/chatplatform/test_metrics_of_several_processes.py",
    "tests/chatplatform/test_production_start.py",
    "tests/governance/test_usage_limits_across_processes.py",
    "tests/agents/test_admin.py",
    "tests/chat/test_session_search.py",
    "tests/agents/test_concurrency.py",
    "tests/agents/test_validation.py",
]


def _unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return "tests/pages" if path.startswith("tests/pages/") else path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {unit: position for position, unit in enumerate(LONGEST_UNITS)}
    items.sort(key=lambda item: rank.get(_unit(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadfile` by the units above, in the order of the collection."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongestFirst(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    config.option.loadscopereorder = False  # xdist's own order is by number of tests, not time
    return LongestFirst(config, log)


def bearer_token(user_id: str, *, admin: bool = False, expires_in: int = 3600, **claims: Any) -> str:
    """A token like `manage.py issue_token` signs: `sub` plus optional profile claims."""
    now = int(time.time())
    payload: dict[str, Any] = {"sub": user_id, "iat": now, "exp": now + expires_in, **claims}
    if admin:
        payload["roles"] = [*payload.get("roles", []), "chat-admin"]
    return sign_token(payload)


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where a migrated SQLite file is kept for platform processes of the tests (tests.servers.migrated_copy)."""
    return tmp_path_factory.mktemp("migrated") / "template.sqlite3"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """On SQLite the test database is a file, not shared memory, so that real worker and server
    processes (tests/events) can share it, as they share PostgreSQL's. As fast here as memory."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3"):
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's, with the connections the turns' database threads keep, and PostgreSQL's
    connection pool, closed before the test database is dropped."""
    yield
    db.close_connections()
    asyncio.run(sync_to_async(connections.close_all)())  # the async tests' ORM calls ran on asgiref's thread
    for connection in connections.all():
        if hasattr(connection, "close_pool"):  # PostgreSQL's pool keeps its idle connections open
            connection.close_pool()


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


@pytest.fixture
def staff(db: None) -> Client:
    """A browser signed in to the Django admin as the superuser `staff`."""
    client = Client()
    client.force_login(ChatUser.objects.create_superuser("staff"))
    return client


def post_agent(client: APIClient, agent: dict[str, Any], **body: Any) -> Any:
    """`POST /api/chat-admin/agent` with `{"agent": agent, **body}` (docs/api.md, "Agents")."""
    return client.post("/api/chat-admin/agent", {"agent": agent, **body}, format="json")


def assert_ok(response: Any) -> Any:
    """The response is a 200; its JSON body."""
    assert response.status_code == 200, response.content
    return response.json()


def assert_error(response: Any, status: int, code: str | None = None, *, mentions: str | None = None) -> dict[str, Any]:
    """The response is the failure envelope with this status (and code, and wording)."""
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
