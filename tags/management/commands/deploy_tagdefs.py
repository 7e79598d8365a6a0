"""`python manage.py deploy_tagdefs FILE --group-id G [--user-id U] [--dry-run]` (docs/api.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.exceptions import ValidationError

from chatplatform.api.exceptions import flatten_errors
from tags import services
from tags.serializers import validate_batch

DEFAULT_USER_ID = "deploy_tagdefs"


class Command(BaseCommand):
    help = (
        "Apply a batch of tag definitions from a JSON file {userId?, tagDefinitions: [...]} as the IaC "
        "endpoint does: every definition joins the group, definitions of the group missing from the "
        "file are deleted, all or nothing; {{stage}} in a web component url becomes CHAT_STAGE."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="JSON file: {userId?, tagDefinitions: [...]}")
        parser.add_argument("--group-id", required=True, help="the deployment group the definitions belong to")
        parser.add_argument("--user-id", help=f"audit stamp; default: the file's userId, else {DEFAULT_USER_ID!r}")
        parser.add_argument("--dry-run", action="store_true", help="validate and report, write nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        group_id = options["group_id"].strip()
        if not group_id or len(group_id) > 200:
            raise CommandError("--group-id must be 1 to 200 characters")
        try:
            payload = json.loads(Path(options["file"]).read_text(encoding="utf-8"))
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc.strerror or exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CommandError(f"{options['file']} is not valid JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise CommandError(f"{options['file']} must hold a JSON object {{userId?, tagDefinitions: [...]}}")
        try:
            file_user_id, definitions = validate_batch(payload, field=None)
        except ValidationError as exc:
            raise CommandError("; ".join(flatten_errors(exc.detail))) from None

        result = services.tags_deploy(
            definitions=definitions,
            group_id=group_id,
            user_id=options["user_id"] or file_user_id or DEFAULT_USER_ID,
            dry_run=options["dry_run"],
        )
        verb = "would apply" if options["dry_run"] else "applied"
        self.stdout.write(
            f"group {group_id}: {verb} {result.applied}, {'would delete' if options['dry_run'] else 'deleted'} {result.deleted}"
        )
