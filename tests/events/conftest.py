"""Fixtures of the events tests: a webhook receiver, fast worker settings, worker runs and processes.

Periods, backoffs and timeouts are the documented settings (README "Background worker"), made
small here so that a test waits seconds, not minutes. Worker processes read them from the
environment, the test process from its settings: `fast_worker` sets both alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from chat.turn import wait_for_running_turns
from chatplatform.models import WorkerProcess
from tests.asgi_client import AsgiClient
from tests.factories import ChatAppFactory
from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)
from tests.peers.webhook_receiver import WebhookReceiver
from tests.servers import ROOT, database_url_of_test_db

SECRET = "receiver-secret-0123456789"
ALL_EVENTS = ["session.created", "session.completed", "feedback.created", "insight.generated"]

# The documented knobs at test speed (settings name → value); environment variables of the same names.
FAST = {
    "CHAT_WORKER_POLL_SECONDS": 0.05,
    "CHAT_WORKER_HEARTBEAT_SECONDS": 0.3,
    "CHAT_TASK_BACKOFF_SECONDS": 0.1,
    "CHAT_TASK_MAX_ATTEMPTS": 3,
    "CHAT_WEBHOOK_TIMEOUT_SECONDS": 1.0,
    "CHAT_WEBHOOK_BACKOFF_SECONDS": 0.4,
    "CHAT_INSIGHTS_TIMEOUT_SECONDS": 2.0,
}


@pytest.fixture
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver() as running:
        yield running


@pytest.fixture
def fast_worker(settings: Any) -> dict[str, str]:
    """Test-speed settings in this process; returns them as environment variables for worker processes."""
    for name, value in FAST.items():
        setattr(settings, name, value)
    return {name: str(value) for name, value in FAST.items()}


@pytest.fixture
def webhooks(settings: Any, receiver: WebhookReceiver, fast_worker: dict[str, str]) -> dict[str, str]:
    """CHAT_WEBHOOKS: every event to the receiver, in this process and (returned) for worker processes."""
    settings.CHAT_WEBHOOKS = [{"url": receiver.url, "secret": SECRET, "events": ALL_EVENTS}]
    return {**fast_worker, "CHAT_WEBHOOKS": json.dumps(settings.CHAT_WEBHOOKS)}


@pytest.fixture
def app(transactional_db: None) -> Any:
    """A chat app whose agent answers with the offline model."""
    return ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="offline")


def run_worker() -> str:
    """`manage.py run_worker --burst` in this process: what is due now, then return."""
    out = StringIO()
    call_command("run_worker", "--burst", stdout=out)
    return out.getvalue()


def converse_response(client: Any, **fields: Any) -> Any:
    """A turn of `client`'s user (an APIClient of `client_for`) through the ASGI application; its
    after-work (the title) done."""
    body = {"chatAppId": "support", "agentId": "helper", "message": "Hello there", "features": {}, "source": "user", **fields}

    async def turn() -> Any:
        response = await AsgiClient(AUTHORIZATION=client._credentials["HTTP_AUTHORIZATION"]).post("/api/chat/converse", body)
        await wait_for_running_turns()
        return response

    return async_to_sync(turn)()


def converse(client: Any, **fields: Any) -> dict[str, Any]:
    response = converse_response(client, **fields)
    assert response.status_code == 200, response.content
    return response.json()


@contextmanager
def worker_process(env: dict[str, str], *, worker_id: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real `manage.py run_worker` on the test database; yields once it has registered itself."""
    log = tempfile.NamedTemporaryFile(prefix=f"{worker_id}-", suffix=".log", delete=False)  # noqa: SIM115 - read on failure
    process = subprocess.Popen(
        [sys.executable, "manage.py", "run_worker", "--worker-id", worker_id],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": database_url_of_test_db(), "LOG_LEVEL": "WARNING", **env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while not WorkerProcess.objects.filter(worker_id=worker_id).exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {worker_id} did not start: {Path(log.name).read_text()[-3000:]}")
            time.sleep(0.05)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        log.close()


def wait_until(condition: Callable[[], Any], *, timeout: float = 20.0, what: str = "the condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
