"""`python manage.py apply_config FILE [--dry-run] [--prune]` (docs/api.md, "Configuration as code")."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.config.files import FileFormatError, load
from chat.config.services import Action, config_apply
from chatplatform.api.errors import ApiError

DEFAULT_USER_ID = "apply_config"


class Command(BaseCommand):
    help = (
        "Make the stored definitions what FILE (YAML or JSON, as export_config writes it) says, like POST "
        "/api/chat-admin/config/apply: all in one transaction, or nothing when one definition is invalid."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="a .yaml, .yml or .json configuration")
        parser.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
        parser.add_argument("--prune", action="store_true", help="delete the records of the kinds in FILE that it does not list")
        parser.add_argument("--user-id", default=DEFAULT_USER_ID, help=f"stamped as createdBy / lastModifiedBy (default {DEFAULT_USER_ID})")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = load(Path(options["file"]))
            changes = config_apply(config=config, user_id=options["user_id"], dry_run=options["dry_run"], prune=options["prune"])
        except FileFormatError as exc:
            raise CommandError(str(exc)) from None
        except ApiError as exc:
            raise CommandError(exc.message) from None
        verb = "would " if options["dry_run"] else ""
        for change in changes:
            if change.action != Action.UNCHANGED:
                self.stdout.write(f"{verb}{change.action} {change.kind} {change.id}")
        counts = Counter(change.action for change in changes)
        actions = (Action.CREATE, Action.UPDATE, Action.DELETE, Action.UNCHANGED)
        self.stdout.write(f"{verb}" + ", ".join(f"{action} {counts[action]}" for action in actions))
