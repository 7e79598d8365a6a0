"""The chat page in a real Chromium (Playwright), against the platform served by uvicorn.

The server is a process of its own on a database of its own (a SQLite file, or a new PostgreSQL
database on the server of DATABASE_URL), seeded with the demo data; its agent answers through
the scripted OpenAI-compatible model server of this process (tests/peers/openai_server.py). Tests
set what the model answers, sign people in through the form or the token-to-cookie exchange, and
check what a person sees. Screenshots of the main states go to SCREENSHOTS (README, "The chat page").

Chromium is Debian's (`apt-get install -y chromium`); without it every test here is skipped, and
the run's summary says so loudly.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.conftest import bearer_token
from tests.peers.openai_server import OpenAIServer, Reply
from tests.servers import ROOT, ServerProcess, asgi_server, migrated_copy

CHROMIUM = "/usr/bin/chromium"
# Assertions wait for what a person would wait for: the suite runs two workers on two cores, and
# Playwright's default of 5 s was met by a busy machine, not by a broken page.
expect.set_options(timeout=15_000)
# What Chromium needs as root on a machine without a network (LIBRARIES.md).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SCREENSHOTS = Path(os.environ.get("CHAT_SCREENSHOTS_DIR") or ROOT / "screenshots")
INSTALL_HINT = (
    "Chromium is not installed: the browser tests of the chat page (tests/pages) were SKIPPED. Install it: apt-get install -y chromium"
)
AGENT = "pages-agent"
MODEL = "openai:scripted"
GRADER = "openai:grader"


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not os.path.exists(CHROMIUM):
        terminalreporter.write_sep("!", INSTALL_HINT, red=True, bold=True)


@pytest.fixture(scope="package", autouse=True)
def _chromium_present() -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(INSTALL_HINT)


def echo(body: dict[str, Any]) -> Reply:
    """The scripted model's default: the last user message echoed, word by word, 20 ms apart."""
    last = next((m for m in reversed(body.get("messages", [])) if m.get("role") == "user"), {})
    content = last.get("content")
    text = content if isinstance(content, str) else " ".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
    return Reply(text=f"You said: {text}", token_delay=0.02)


def _manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True)


@contextlib.contextmanager
def _database(tmp: Path, template: Path) -> Iterator[str]:
    """The URL of a database for the server: a copy of the migrated SQLite file `template`, or on
    the PostgreSQL server of DATABASE_URL (the suite's second pass) an empty database of its own,
    dropped afterwards."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{migrated_copy(template, tmp)}"
        return
    import psycopg

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'chatplatform'}_pages"
    maintenance = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(maintenance, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(maintenance, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Site:
    """The platform under test: its address, its environment, the model behind its agent."""

    url: str
    env: dict[str, str]
    model: OpenAIServer
    server: ServerProcess

    def api(self, method: str, path: str, *, user: str = "pages-admin", admin: bool = True, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {bearer_token(user, admin=admin)}"}
        return httpx.request(method, f"{self.url}{path}", headers=headers, timeout=30, **kwargs)

    def chat_app(self, chat_app_id: str, *, features: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """Create or replace a chat app on the pages agent (Admin API)."""
        body = {"chatAppId": chat_app_id, "title": fields.pop("title", chat_app_id), "agentId": AGENT, "features": features or {}, **fields}
        response = self.api("POST", "/api/chat-admin/chat-app", json={"chatApp": body})
        assert response.status_code == 200, response.text
        return response.json()["chatApp"]


def start_site(env: dict[str, str], model: OpenAIServer, stack: contextlib.ExitStack, *, seed: bool = True) -> Site:
    """The platform on `env`'s database (migrated and seeded first, unless another server did)."""
    if seed:
        _manage(env, "seed_demo", "--migrate")  # migrates only what is unapplied (none on a SQLite copy)
    server = stack.enter_context(asgi_server(env))
    return Site(server.url, env, model, server)


@pytest.fixture(scope="package")
def site(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path, _chromium_present: None) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("pages")
    with contextlib.ExitStack() as stack:
        model = stack.enter_context(OpenAIServer())
        model.script(echo)
        env = {
            **os.environ,
            "DATABASE_URL": stack.enter_context(_database(tmp, migrated_sqlite)),
            "DEBUG": "true",  # plain-HTTP cookies, as `make run`
            "LOG_LEVEL": "WARNING",
            "OPENAI_BASE_URL": model.base_url,
            "OPENAI_API_KEY": "test-key",
            "CHAT_FILES_ROOT": str(tmp / "files"),
            # Page loads and turns of many tests: the rate-limit test runs a server of its own.
            "CHAT_RATE_LIMITS": '{"chat": 100000}',
        }
        site = start_site(env, model, stack)
        agent = {"agentId": AGENT, "basePrompt": "You are the pages test agent.", "toolIds": [], "foundationModel": MODEL}
        agent["verificationFoundationModel"] = GRADER
        assert site.api("POST", "/api/chat-admin/agent", json={"agent": agent}).status_code == 200
        yield site


@pytest.fixture
def model(site: Site) -> Iterator[OpenAIServer]:
    """The scripted model; back to echoing after the test."""
    yield site.model
    site.model.reset()
    site.model.script(echo)


@pytest.fixture(scope="package")
def browser(pytestconfig: pytest.Config, _chromium_present: None) -> Iterator[Any]:
    """Chromium for this package only: Playwright's sync API marks an event loop as running in
    this thread while it is started, which the rest of the suite (Django's ORM, async tests) must
    not see, so it stops when the package ends."""
    from playwright.sync_api import sync_playwright

    headed = bool(pytestconfig.getoption("--headed", default=False))
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=not headed, slow_mo=pytestconfig.getoption("--slowmo", default=0) or 0
        )
        yield launched
        launched.close()


_users = itertools.count(1)


@dataclass
class Person:
    """Someone using the page: their browser context and page, signed in as `user_id`."""

    user_id: str
    context: Any
    page: Any
    site: Site

    def open(self, path: str = "/") -> Any:
        self.page.goto(f"{self.site.url}{path}")
        return self.page

    def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.site.api(method, path, user=self.user_id, admin=False, **kwargs)


@pytest.fixture
def person_factory(browser: Any, site: Site) -> Iterator[Callable[..., Person]]:
    """`person_factory(**claims)` → a new person signed in through POST /api/chat/auth/session
    (docs/api.md, "Authentication": a bearer token becomes the `session` cookie); `signed_in=False` for none."""
    contexts = []

    def make(*, signed_in: bool = True, viewport: dict[str, int] | None = None, bypass_csp: bool = False, **claims: Any) -> Person:
        user_id = claims.pop("user_id", None) or f"person-{os.getpid()}-{next(_users)}"
        context = browser.new_context(viewport=viewport or {"width": 1200, "height": 820}, bypass_csp=bypass_csp)
        context.set_default_timeout(15000)
        contexts.append(context)
        if signed_in:
            token = bearer_token(user_id, **claims)
            answer = context.request.post(f"{site.url}/api/chat/auth/session", headers={"Authorization": f"Bearer {token}"})
            assert answer.ok, answer.text()
        return Person(user_id, context, context.new_page(), site)

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def person(person_factory: Callable[..., Person]) -> Person:
    return person_factory(given_name="Ada", family_name="Lovelace")


def shot(page: Any, name: str) -> Path:
    """A screenshot of a main state, for people to look at (README)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path
