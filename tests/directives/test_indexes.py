"""Each search branch reads through an index, never a scan of the table (SemanticDirective.Meta)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from directives.models import SemanticDirective
from directives.selectors import DirectiveSearch, directives_search

START = datetime(2026, 1, 1, tzinfo=UTC)
THREE_SCOPES = ["chatapp#app-7", "agent#agent-7", "tool#tool-7@1"]


def fill(count: int) -> None:
    """`count` directives over many scopes and creators, inserted in one statement per batch."""
    kinds = ("chatapp#app-{}", "agent#agent-{}", "tool#tool-{}@1", "entity#acme-{}")
    rows = []
    for n in range(count):
        scope = kinds[n % 4].format((n // 4) % (count // 8))  # every scope holds two directives
        scope_type, scope_value = scope.split("#", 1)
        rows.append(
            SemanticDirective(
                scope=scope,
                scope_type=scope_type,
                scope_value=scope_value,
                directive_id=f"directive-{n}",
                description="when it applies",
                instructions="Do it.",
                create_date=START + timedelta(minutes=n),
                last_update=START + timedelta(minutes=n),
                created_by=f"user-{n % 50}",
                last_updated_by=f"user-{n % 50}",
            )
        )
    SemanticDirective.objects.bulk_create(rows, batch_size=500)


def plan(search: DirectiveSearch) -> str:
    """The query plan of the statement the search runs for its first page."""
    with CaptureQueriesContext(connection) as captured:
        directives_search(search=search, limit=100, after=None)
    (query,) = captured.captured_queries
    explain = "EXPLAIN" if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN"
    with connection.cursor() as cursor:
        cursor.execute(f"{explain} {query['sql']}")
        return "\n".join(" ".join(str(column) for column in row) for row in cursor.fetchall())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the planner checked is PostgreSQL's")
@pytest.mark.django_db
def test_a_search_by_three_scopes_uses_an_index_on_postgresql():
    fill(2000)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {SemanticDirective._meta.db_table}")
    text = plan(DirectiveSearch(scopes=THREE_SCOPES))
    assert "index" in text.lower(), text
    assert "Seq Scan" not in text, text
    page, _ = directives_search(search=DirectiveSearch(scopes=THREE_SCOPES), limit=100, after=None)
    assert {d.scope for d in page} == set(THREE_SCOPES)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="index names in SQLite's EXPLAIN QUERY PLAN")
@pytest.mark.django_db
@pytest.mark.parametrize(
    ("search", "index"),
    [
        (DirectiveSearch(scopes=THREE_SCOPES), "directive_scope_created"),
        (DirectiveSearch(created_by="user-3"), "directive_creator_created"),
        (DirectiveSearch(directive_ids=["directive-1", "directive-2"]), "directive_id"),
        (DirectiveSearch(), "directive_created"),
    ],
)
def test_each_search_branch_uses_its_index_on_sqlite(search, index):
    fill(200)
    text = plan(search)
    assert f"USING INDEX {index} " in text + " ", text
