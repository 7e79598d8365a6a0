"""`python manage.py knowledge_pgvector --dimensions N [--hnsw]`: let PostgreSQL rank the vectors
of knowledge bases with pgvector (README "Knowledge bases")."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connection, transaction

from knowledge import pgvector


class Command(BaseCommand):
    help = (
        "Create the pgvector extension and a vector(N) column on knowledge chunks, copy the stored vectors of "
        "that length into it, and rank semantic searches in PostgreSQL from then on (restart the servers)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dimensions", type=int, required=True, help="the length of CHAT_EMBEDDING_MODEL's vectors")
        parser.add_argument("--hnsw", action="store_true", help="also build an HNSW index (approximate; for very large bases)")
        parser.add_argument("--dry-run", action="store_true", help="say whether the extension can be created, change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        if connection.vendor != "postgresql":
            raise CommandError("pgvector needs PostgreSQL; on SQLite vectors are always ranked in process (NumPy)")
        if options["dimensions"] < 1:
            raise CommandError("--dimensions must be a positive whole number")
        with connection.cursor() as cursor:
            cursor.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            row = cursor.fetchone()
        if row is None:
            raise CommandError("the server has no pgvector extension to create: install it first (Debian: postgresql-<version>-pgvector)")
        if options["dry_run"]:
            self.stdout.write(f"pgvector {row[0]} can be created; nothing changed (dry run)")
            return
        try:
            with transaction.atomic():
                copied = pgvector.enable(options["dimensions"], hnsw=options["hnsw"])
        except DatabaseError as exc:
            raise CommandError(f"pgvector could not be enabled: {exc}") from None
        self.stdout.write(f"pgvector enabled: {copied} chunk vectors copied; restart the servers so that they use it")
