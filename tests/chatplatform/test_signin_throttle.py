"""Sign-in cannot be guessed at full speed (docs/deploy.md, "Sign-in throttling"): failures are counted
per username and per client address in the shared cache, so two server processes agree; past a
limit every attempt is refused with 429 until the window ends, even with the right password."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.test import Client

from chat.users.models import ChatUser
from chatplatform.models import AuditEntry
from tests.peers.redis_server import RedisProcess
from tests.servers import ServerProcess, asgi_server, manage, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

ADDRESS_LIMIT = 15  # 50 by default; fewer here, as each attempt costs a password hash


def sign_in(server: ServerProcess, path: str, username: str, password: str) -> httpx.Response:
    """What a browser does: the form (its CSRF cookie and token), then the POST."""
    with httpx.Client(base_url=server.url, timeout=60) as browser:
        form = browser.get(path)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        return browser.post(path, data={"username": username, "password": password, "csrfmiddlewaretoken": token})


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path) -> Iterator[tuple[ServerProcess, ServerProcess, dict]]:
    folder = tmp_path_factory.mktemp("signin")
    redis = RedisProcess(folder)
    redis.start()
    env = sqlite_env(migrated_copy(migrated_sqlite, folder), REDIS_URL=redis.url, CHAT_SIGNIN_MAX_FAILURES_PER_ADDRESS=str(ADDRESS_LIMIT))
    manage(
        env,
        "shell",
        "-c",
        "from chat.models import ChatUser; "
        "ChatUser.objects.create_superuser('victim', 'victim-password-1'); "
        "ChatUser.objects.create_user('bystander', 'bystander-password-1')",
    )
    try:
        with asgi_server(env) as first, asgi_server(env) as second:
            yield first, second, env
    finally:
        redis.stop()


def test_ten_failures_for_a_username_across_two_processes_lock_it_even_with_the_right_password(servers):
    first, second, env = servers
    for attempt in range(10):
        server, path = (first, "/accounts/login/") if attempt % 2 else (second, "/admin/login/")
        refused = sign_in(server, path, "victim", f"guess-{attempt}")
        assert refused.status_code == 200, "a wrong password shows the form again until the limit"

    for server, path in ((first, "/accounts/login/"), (second, "/admin/login/")):
        locked = sign_in(server, path, "victim", "victim-password-1")
        assert locked.status_code == 429
        assert 800 < int(locked.headers["Retry-After"]) <= 900
        assert "Too many sign-in attempts" in locked.text
        assert "this user name" in locked.text

    # Another account from the same address is not locked by these ten.
    assert sign_in(first, "/accounts/login/", "bystander", "bystander-password-1").status_code == 302

    entries = manage(
        env,
        "shell",
        "-c",
        "from chatplatform.models import AuditEntry; "
        "print([(e.object_type, e.object_id, e.actor) for e in AuditEntry.objects.filter(object_type='sign-in lockout')])",
    )
    assert "('sign-in lockout', 'username victim', 'address 127.0.0.1')" in entries


def test_failures_from_one_address_lock_every_account_from_it(servers):
    first, second, _ = servers
    # Ten failures came from this address in the test above; these bring it to the limit.
    for attempt in range(ADDRESS_LIMIT - 10):
        server = (first, second)[attempt % 2]
        assert sign_in(server, "/accounts/login/", f"nobody-{attempt}", "guess").status_code == 200

    locked = sign_in(second, "/accounts/login/", "bystander", "bystander-password-1")
    assert locked.status_code == 429
    assert "your network address" in locked.text
    assert int(locked.headers["Retry-After"]) > 0


@pytest.mark.django_db
def test_the_lockout_ends_with_its_window(settings):
    settings.CHAT_SIGNIN_MAX_FAILURES_PER_USER = 2
    settings.CHAT_SIGNIN_WINDOW_SECONDS = 2
    ChatUser.objects.create_user("carol", "carol-password-1")
    browser = Client()

    for guess in ("one", "two"):
        assert browser.post("/accounts/login/", {"username": "carol", "password": guess}).status_code == 200
    refused = browser.post("/accounts/login/", {"username": "Carol", "password": "carol-password-1"})
    assert refused.status_code == 429
    assert refused["Retry-After"] in {"1", "2"}
    assert AuditEntry.objects.filter(object_type="sign-in lockout", object_id="username carol").count() == 1

    time.sleep(2.1)
    assert browser.post("/accounts/login/", {"username": "carol", "password": "carol-password-1"}).status_code == 302
