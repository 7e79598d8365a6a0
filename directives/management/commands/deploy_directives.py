"""`python manage.py deploy_directives FILE --group-id G [--user-id U] [--dry-run]` (docs/api.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework import serializers

from chatplatform.api.errors import ApiError
from chatplatform.api.exceptions import flatten_errors
from directives import services

DEFAULT_USER_ID = "deploy_directives"


class Command(BaseCommand):
    help = (
        "Apply a batch of semantic directives from a JSON file {userId?, semanticDirectives: [...]} as the group "
        "--group-id, like POST /api/chat-admin/semantic-directive/deploy: every directive gets the group, the "
        "group's directives missing from the file are deleted, all or nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="JSON file: {userId?, semanticDirectives: [...]}")
        parser.add_argument("--group-id", required=True, help="the IaC group the file defines")
        parser.add_argument(
            "--user-id", default=None, help=f"stamped as createdBy/lastUpdatedBy (default: the file's userId, else {DEFAULT_USER_ID})"
        )
        parser.add_argument("--dry-run", action="store_true", help="validate and print what would change; write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        payload = self._read(Path(options["file"]))
        user_id = options["user_id"] or payload.get("userId") or DEFAULT_USER_ID
        if not isinstance(user_id, str):
            raise CommandError("userId in the file must be a string")
        try:
            result = services.directives_deploy(
                group_id=options["group_id"],
                directives=payload.get("semanticDirectives"),
                user_id=user_id,
                dry_run=options["dry_run"],
                stage=settings.CHAT_STAGE,
            )
        except serializers.ValidationError as exc:
            raise CommandError("; ".join(flatten_errors(exc.detail))) from None
        except ApiError as exc:
            raise CommandError(exc.message) from None

        verb = "would " if result.dry_run else ""
        for label, keys in (("create", result.created), ("update", result.updated), ("delete", result.deleted)):
            for scope, directive_id in keys:
                self.stdout.write(f"{verb}{label} {scope} {directive_id}")
        counts = (len(result.created), len(result.updated), len(result.unchanged), len(result.deleted))
        if result.dry_run:
            created, updated, unchanged, deleted = counts
            self.stdout.write(
                f"dry run, nothing written: group {result.group_id}: {created} to create, {updated} to update, "
                f"{unchanged} unchanged, {deleted} to delete"
            )
        else:
            created, updated, unchanged, deleted = counts
            self.stdout.write(
                self.style.SUCCESS(
                    f"group {result.group_id}: {created} created, {updated} updated, {unchanged} unchanged, {deleted} deleted"
                )
            )

    def _read(self, path: Path) -> dict[str, Any]:
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CommandError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot be read ({exc})") from None
        except json.JSONDecodeError as exc:
            raise CommandError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(payload, dict):
            raise CommandError(f"{path}: must hold a JSON object {{userId?, semanticDirectives: [...]}}")
        return payload
