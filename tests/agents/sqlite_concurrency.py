"""Run by test_concurrency.py in a child process: 20 parallel agent updates over HTTP against a
file-based SQLite database, the embedded default (README.md, "Configuration").

pytest-django's SQLite test database lives in shared-cache memory, where concurrent writers fail
at once with "database table is locked" instead of waiting; only a real file shows how the
service behaves for an operator. Usage: python -m tests.agents.sqlite_concurrency DB_FILE
"""

from __future__ import annotations

import json
import os
import sys
import threading

PARALLEL = 20


def main(db_file: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "chatplatform.settings"
    import chatplatform.settings as project_settings

    project_settings.DATABASES["default"]["NAME"] = db_file

    import django

    django.setup()

    from django.core.management import call_command
    from django.db import connections
    from rest_framework.test import APIClient

    from tests.conftest import bearer_token

    call_command("migrate", verbosity=0)
    token = bearer_token("root-admin", admin=True)

    def client() -> APIClient:
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return api

    created = client().post("/api/chat-admin/agent", {"agent": {"agentId": "busy", "basePrompt": "p0", "toolIds": []}}, format="json")
    statuses: list[int] = []
    start = threading.Barrier(PARALLEL)

    def update(number: int) -> None:
        try:
            start.wait()
            response = client().post("/api/chat-admin/agent", {"agent": {"agentId": "busy", "basePrompt": f"p{number}"}}, format="json")
            statuses.append(response.status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=update, args=(number,)) for number in range(1, PARALLEL + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    agent = client().get("/api/chat-admin/agent/busy").json()["agent"]
    versions = client().get("/api/chat-admin/agent/busy/versions").json()["versions"]
    print(
        json.dumps(
            {
                "created": created.status_code,
                "statuses": statuses,
                "version": agent["version"],
                "history": sorted(row["version"] for row in versions),
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
