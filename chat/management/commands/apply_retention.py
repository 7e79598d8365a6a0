"""`python manage.py apply_retention [--dry-run]`: delete the sessions past their chat app's retention."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from chat.governance.services import apply_retention


class Command(BaseCommand):
    help = "Delete sessions older than their chat app's retentionDays (or CHAT_RETENTION_DAYS), printing the counts per chat app."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dry-run", action="store_true", help="print what would be deleted; delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        counts = apply_retention(dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        for chat_app_id, kinds in counts.items():
            self.stdout.write(f"{chat_app_id}: {verb} " + ", ".join(f"{count} {kind}" for kind, count in kinds.items()))
        total = sum(kinds["sessions"] for kinds in counts.values())
        self.stdout.write(f"{verb} {total} session{'s' if total != 1 else ''}")
