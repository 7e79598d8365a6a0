"""pgvector is optional (README.md, "pgvector (optional)"): without it, vectors are ranked in process; its command
refuses clearly where it cannot work. The SQL path itself needs a server with the extension."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from knowledge import pgvector

pytestmark = pytest.mark.django_db


def test_without_the_extension_search_ranks_in_process():
    assert pgvector.enabled() is False  # neither this project's CI PostgreSQL nor SQLite has the column


def test_the_command_says_why_it_cannot_enable_pgvector():
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            if cursor.fetchone():
                pytest.skip("this server has pgvector")
    with pytest.raises(CommandError) as error:
        call_command("knowledge_pgvector", "--dimensions", "384", "--dry-run")
    expected = "no pgvector extension to create" if connection.vendor == "postgresql" else "needs PostgreSQL"
    assert expected in str(error.value)
