"""The production server (uvicorn + chatplatform.asgi) end to end, on its own SQLite database.

Django's test client never runs the ASGI stack the way uvicorn does: here the middleware runs on
the event loop (chatplatform/middleware.py), so these tests walk the paths where a hook must still
reach the database: logging in (a session save), admin messages, a form's CSRF check.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import pytest

from tests.converse.helpers import parse_sse
from tests.servers import ROOT, ServerProcess, asgi_server, migrated_copy

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path) -> Iterator[tuple[ServerProcess, str]]:
    """The server on the demo data (`seed_demo`: admin / admin-demo, the offline agent), and a user's token."""
    database = migrated_copy(migrated_sqlite, tmp_path_factory.mktemp("asgi"))
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "DEBUG": "true",  # plain-HTTP cookies, as `make run`
        "LOG_LEVEL": "WARNING",
    }
    env.pop("REDIS_URL", None)
    _manage(env, "seed_demo")
    token = _manage(env, "issue_token", "asgi-user").strip()
    with asgi_server(env) as running:
        yield running, token


def _csrf_token(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, "the form carries a CSRF token"
    return match.group(1)


def test_an_operator_logs_in_to_the_admin_and_sees_the_message_of_an_action(server):
    running, _ = server
    with httpx.Client(base_url=running.url, timeout=10) as browser:
        login = browser.get("/admin/login/")
        assert login.status_code == 200
        refused = browser.post("/admin/login/", data={"username": "admin", "password": "admin-demo"})
        assert refused.status_code == 403, "a form POST without its CSRF token is refused"
        done = browser.post(
            "/admin/login/?next=/admin/",
            data={"username": "admin", "password": "admin-demo", "csrfmiddlewaretoken": _csrf_token(login.text), "next": "/admin/"},
        )
        assert done.status_code == 302 and done.headers["location"] == "/admin/"
        assert "Site administration" in browser.get("/admin/").text

        tags = browser.get("/admin/tags/tagdefinition/")
        selected = re.search(r'name="_selected_action" value="([^"]+)"', tags.text)
        assert selected, "the demo data has tag definitions"
        action = browser.post(
            "/admin/tags/tagdefinition/",
            data={"action": "clear_tag_cache", "_selected_action": selected.group(1), "csrfmiddlewaretoken": _csrf_token(tags.text)},
        )
        assert action.status_code == 302
        assert "The tag cache was cleared." in browser.get("/admin/tags/tagdefinition/").text


def test_every_response_carries_the_security_headers_and_static_files_are_served(server):
    running, _ = server
    page = httpx.get(f"{running.url}/admin/login/", timeout=10)
    assert page.headers["X-Frame-Options"] == "DENY"
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"] == "same-origin"
    stylesheet = httpx.get(f"{running.url}/static/admin/css/base.css", timeout=10)
    assert stylesheet.status_code == 200
    assert "text/css" in stylesheet.headers["content-type"]


def test_a_converse_stream_through_the_server_answers_with_the_offline_agent(server):
    running, token = server
    body = {"chatAppId": "demo", "agentId": "demo-assistant", "message": "Hello server", "features": {}, "source": "user"}
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    response = httpx.post(f"{running.url}/api/chat/converse", json=body, headers=headers, timeout=30)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["X-Frame-Options"] == "DENY"
    assert int(response.headers["X-RateLimit-Remaining"]) >= 0
    events = parse_sse(response.content)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "session" and "done" in kinds and "delta" in kinds
    done = dict(events)["done"]
    assert "".join(data["text"] for kind, data in events if kind == "delta") == done["response"]
    assert "Hello server" in done["response"]


def test_a_bad_converse_body_is_a_400_envelope_through_the_server(server):
    running, token = server
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    response = httpx.post(f"{running.url}/api/chat/converse", json={"chatAppId": "demo"}, headers=headers, timeout=10)
    assert response.status_code == 400
    assert response.json()["success"] is False
    assert "agentId" in response.json()["error"]


def test_the_server_dates_each_answer_and_stops_when_told_to(tmp_path):
    """chatplatform.server keeps uvicorn's housekeeping (a Date header kept current, SIGTERM honoured)
    on a once-a-second tick."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "LOG_LEVEL": "WARNING"}
    with asgi_server(env) as running:
        # The header is set at a tick, in whole seconds: a ticking server's lags the clock by less
        # than 2 s; the one set at startup would lag by 3 s by now.
        time.sleep(3)
        answer = httpx.get(f"{running.url}/healthz", timeout=10)
        assert abs(parsedate_to_datetime(answer.headers["Date"]).timestamp() - time.time()) < 2.5
        running.process.send_signal(signal.SIGTERM)
        # Shut down gracefully, uvicorn re-raises the signal it caught: the process ends by SIGTERM.
        assert running.process.wait(timeout=10) == -signal.SIGTERM


def test_an_https_redirect_is_djangos_answer_on_the_doors_and_every_other_path(tmp_path):
    """The doors are answered in front of Django's handler (chatplatform.fastpath); what Django's
    middleware answers before any view (here the HTTPS redirect) is still its answer, the same on
    every path."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "LOG_LEVEL": "WARNING", "SECURE_SSL_REDIRECT": "true"}
    with asgi_server(env) as running:
        for path in ("/api/chat/converse", "/v1/chat/completions", "/api/chat/sessions/s1/stream", "/api/chat/user"):
            response = httpx.post(f"{running.url}{path}", json={}, timeout=10)
            assert response.status_code == 301, path
            assert response.headers["location"] == f"https://{running.url.removeprefix('http://')}{path}"
