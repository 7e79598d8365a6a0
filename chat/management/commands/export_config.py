"""`python manage.py export_config [FILE]` (docs/api.md, "Configuration as code")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chat.config.files import FileFormatError, dumps, format_of
from chat.config.selectors import config_export


class Command(BaseCommand):
    help = (
        "Write every tool, knowledge base, agent, tag definition, semantic directive and chat app to FILE (YAML or JSON by "
        'its extension), as GET /api/chat-admin/config answers them: no stamps, versions or counts; secrets as "********".'
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", help="a .yaml, .yml or .json file; standard output when absent")
        parser.add_argument("--format", choices=["yaml", "json"], default="yaml", help="the format on standard output (default yaml)")

    def handle(self, *args: Any, **options: Any) -> None:
        config = config_export()
        if options["file"] is None:
            self.stdout.write(dumps(config, options["format"]), ending="")
            return
        path = Path(options["file"])
        try:
            path.write_text(dumps(config, format_of(path)), encoding="utf-8")
        except FileFormatError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from None
        count = sum(len(definitions) for definitions in config.values())
        self.stdout.write(f"wrote {count} definitions to {path}")
