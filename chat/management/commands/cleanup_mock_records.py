"""`python manage.py cleanup_mock_records [--dry-run]`: delete test records older than one day."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from chat.chat_apps.services import mock_records_cleanup


class Command(BaseCommand):
    help = "Delete `testType: mock` chat apps, agents and tools created more than one day ago, printing each."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="print what would be deleted; delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        deleted = mock_records_cleanup(dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        for kind, ids in deleted.items():
            for record_id in ids:
                self.stdout.write(f"{verb} {kind[:-1]} {record_id}")
        total = sum(len(ids) for ids in deleted.values())
        self.stdout.write(f"{verb} {total} mock record{'s' if total != 1 else ''}")
