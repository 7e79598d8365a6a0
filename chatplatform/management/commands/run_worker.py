"""`python manage.py run_worker [--burst] [--worker-id ID]`: the background worker (README.md)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatplatform.worker import Worker, new_worker_id


class Command(BaseCommand):
    help = (
        "Run the background worker on the configured backend (CHAT_TASK_BACKEND: the database by default, "
        "RQ with REDIS_URL): tasks with their retries, periodic jobs and webhook deliveries. "
        "Stops on SIGTERM or Ctrl-C after the current task."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--burst", action="store_true", help="do what is due now, then exit")
        parser.add_argument("--worker-id", default=None, help="unique among running workers (default: host-pid-random)")

    def handle(self, *args: Any, **options: Any) -> None:
        worker_id = options["worker_id"] or new_worker_id()
        if not 1 <= len(worker_id) <= 64:
            raise CommandError("--worker-id must be 1 to 64 characters")
        self.stdout.write(
            f"worker {worker_id}: backend {settings.CHAT_TASK_BACKEND}, polling every {settings.CHAT_WORKER_POLL_SECONDS:g} s"
        )
        Worker(worker_id=worker_id, burst=options["burst"]).run()
