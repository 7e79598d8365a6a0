"""`python manage.py erase_user USER_ID [--dry-run]`: delete a user and everything of theirs."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.governance.services import erase_user
from chatplatform.api.errors import NotFound


class Command(BaseCommand):
    help = "Erase a user and everything of theirs: sessions, messages, files and bytes, feedback, prefs, widget data, usage (docs/data.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("user_id", metavar="USER_ID")
        parser.add_argument("--dry-run", action="store_true", help="print what would be deleted; delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        try:
            counts = erase_user(user_id=options["user_id"], actor="manage.py erase_user", dry_run=dry_run)
        except NotFound as exc:
            raise CommandError(exc.message) from None
        verb = "would delete" if dry_run else "erased"
        self.stdout.write(f"{verb}: " + ", ".join(f"{count} {kind}" for kind, count in counts.items()))
