"""Rate limits (docs/api.md, "Rate limits"): headers on every response, 429 with Retry-After, one budget
per user, shared by every server process when REDIS_URL is set."""

from __future__ import annotations

import os
import time

import httpx
import pytest
from django.db import connection

from chatplatform.api import ratelimit
from tests.conftest import assert_error, bearer_token
from tests.servers import asgi_server, database_url_of_test_db

NOW = time.time()


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch):
    """Windows are aligned to the clock: a test spanning a minute boundary would see its budget
    reset halfway. The limiter's clock stands still here instead."""
    monkeypatch.setattr(ratelimit, "now", lambda: NOW)


def test_headers_are_present_and_count_down(user_client):
    first = user_client.get("/api/chat/user")
    second = user_client.get("/api/chat/user")
    assert first["X-RateLimit-Limit"] == "100"
    assert int(first["X-RateLimit-Remaining"]) == 99
    assert int(second["X-RateLimit-Remaining"]) == 98
    reset = int(first["X-RateLimit-Reset"])
    assert NOW < reset <= NOW + 60


def test_101st_chat_request_in_a_minute_is_429_while_another_user_is_served(client_for):
    alice, bob = client_for("alice"), client_for("bob")
    for _ in range(100):
        assert alice.get("/api/chat/user").status_code == 200
    response = alice.get("/api/chat/user")
    assert_error(response, 429, "RATE_LIMIT_EXCEEDED")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response["X-RateLimit-Remaining"] == "0"
    assert bob.get("/api/chat/user").status_code == 200


def test_admin_endpoints_have_their_own_larger_budget(admin_client):
    response = admin_client.post("/api/chat-admin/users/search", {}, format="json")
    assert response["X-RateLimit-Limit"] == "1000"


def test_unauthenticated_requests_are_counted_per_address(anon_client, db):
    first = anon_client.get("/api/chat/user")
    second = anon_client.get("/api/chat/user")
    assert first.status_code == 401
    assert int(first["X-RateLimit-Remaining"]) - 1 == int(second["X-RateLimit-Remaining"])


def test_limits_are_configurable_by_settings(user_client, settings):
    settings.CHAT_RATE_LIMITS = {**settings.CHAT_RATE_LIMITS, "chat": 2}
    assert user_client.get("/api/chat/user").status_code == 200
    assert user_client.get("/api/chat/user").status_code == 200
    assert_error(user_client.get("/api/chat/user"), 429, "RATE_LIMIT_EXCEEDED")


@pytest.mark.redis
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs REDIS_URL: a shared budget needs a shared cache")
def test_two_server_processes_share_one_budget(transactional_db):
    if connection.vendor != "postgresql":
        pytest.skip("the server processes need a database they can share with the test")
    # Other processes keep the real clock: an hour-long window makes a rollover mid-test unlikely.
    env = {"DATABASE_URL": database_url_of_test_db(), "CHAT_RATE_LIMITS": '{"chat": 10}', "CHAT_RATE_LIMIT_WINDOW_SECONDS": "3600"}
    headers = {"Authorization": f"Bearer {bearer_token('shared-budget-user')}"}
    with asgi_server(env) as one, asgi_server(env) as two:
        statuses = [httpx.get(f"{base}/api/chat/user", headers=headers, timeout=10).status_code for base in [one, two] * 6]
    assert statuses[:10] == [200] * 10
    assert statuses[10:] == [429, 429]
