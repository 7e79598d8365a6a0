"""Concurrent updates of one agent get consecutive versions: 20 parallel updates → +20, with a
history row for each (select_for_update on PostgreSQL, the write lock taken first on SQLite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection, connections

from agents.models import AgentDefinition, AgentVersion

PARALLEL = 20
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(connection.vendor == "sqlite", reason="threads need a real server; the SQLite case runs in a child process below")
@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_updates_raise_the_version_by_twenty(client_for):
    admin = client_for("root-admin", admin=True)
    created = admin.post("/api/chat-admin/agent", {"agent": {"agentId": "busy", "basePrompt": "p0", "toolIds": []}}, format="json")
    assert created.status_code == 200
    statuses: list[int] = []
    start = threading.Barrier(PARALLEL)

    def update(number: int) -> None:
        try:
            own = client_for("root-admin", admin=True)
            start.wait()
            response = own.post("/api/chat-admin/agent", {"agent": {"agentId": "busy", "basePrompt": f"p{number}"}}, format="json")
            statuses.append(response.status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=update, args=(number,)) for number in range(1, PARALLEL + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * PARALLEL
    assert AgentDefinition.objects.get(pk="busy").version == 1 + PARALLEL
    assert sorted(AgentVersion.objects.filter(agent_id="busy").values_list("version", flat=True)) == list(range(1, PARALLEL + 2))


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the embedded SQLite default only")
def test_twenty_parallel_updates_on_the_embedded_sqlite_file_raise_the_version_by_twenty(tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    result = subprocess.run(
        [sys.executable, "-m", "tests.agents.sqlite_concurrency", str(tmp_path / "db.sqlite3")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["created"] == 200
    assert outcome["statuses"] == [200] * PARALLEL
    assert outcome["version"] == 1 + PARALLEL
    assert outcome["history"] == list(range(1, PARALLEL + 2))
