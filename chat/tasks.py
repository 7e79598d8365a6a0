"""Background tasks (django-tasks). The embedded default runs them in-process when enqueued."""

from __future__ import annotations

from django_tasks import task

from chat import services


@task()
def cleanup_mock_records() -> dict[str, list[str]]:
    """Delete `testType: mock` chat apps, agents and tools older than one day (CONTRACT §1)."""
    return services.mock_records_cleanup()
