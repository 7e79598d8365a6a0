"""Database work of the streaming paths: the threads it runs on, and writes built once per model.

`on_db_thread` runs sync database code on a small pool of threads of its own (one on SQLite,
which has one writer anyway; four on PostgreSQL), off the event loop. Their connections persist
between calls, so each call first drops a connection the server has closed (a restart, a
failover, an idle timeout: its socket has something to read while nothing was asked), and after
a database error drops it unless it still answers: a dead connection fails at most the call that
met it. Few threads on purpose: a round trip made from a thread ends in a wait for the GIL
(docs/decisions.md).

`write` inserts model instances with an INSERT written out once per model (Django compiles a new
InsertQuery for each `create`), each value taken through the field's own
`pre_save`/`get_db_prep_save`, so rows are stored exactly as the ORM stores them. No model signals
are sent; the models written here have none. The rows and an optional closing statement go in
atomically: on PostgreSQL as one statement (data-modifying CTEs; foreign keys are checked at
commit), elsewhere in one transaction. On PostgreSQL these statements bind their parameters on
the server (`cursor`); statements are not prepared (Django turns that off, for PgBouncer).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import select as io_select
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, models, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from chatplatform import telemetry

logger = logging.getLogger(__name__)

_sqlite = settings.DATABASES["default"]["ENGINE"].endswith("sqlite3")
_executor = ThreadPoolExecutor(max_workers=1 if _sqlite else 4, thread_name_prefix="turn-db")


def on_db_thread(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` as a coroutine function run on the database threads, on a connection known to be alive.

    A bare `run_in_executor`: asgiref's `sync_to_async` adds context copying and coroutine
    checks, about a tenth of a millisecond per hop, and `database_sync_to_async` also funnels
    everything through Django's one thread-sensitive thread."""

    async def on_thread(*args: Any, **kwargs: Any) -> Any:
        call = functools.partial(_checked, function, args, kwargs)
        if telemetry.ENABLED:  # the trace goes along: an event written there carries it (docs/deploy.md, "Traces")
            call = functools.partial(contextvars.copy_context().run, call)
        return await asyncio.get_running_loop().run_in_executor(_executor, call)

    return on_thread


def _checked(function: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    if not settings.DATABASE_HEALTH_CHECKS:
        return function(*args, **kwargs)
    for connection in connections.all(initialized_only=True):
        if _closed_by_server(connection):
            logger.warning("database connection %s was closed by the server; opening another", connection.alias)
            _drop(connection)
    try:
        return function(*args, **kwargs)
    except DatabaseError:
        for connection in connections.all(initialized_only=True):
            if connection.connection is not None and not connection.in_atomic_block and not connection.is_usable():
                _drop(connection)
        raise


def _closed_by_server(connection: BaseDatabaseWrapper) -> bool:
    """Whether an idle connection is gone, without a round trip: the server has closed it (psycopg
    knows, or its socket can be read while no query is under way)."""
    raw = connection.connection
    if raw is None or connection.vendor != "postgresql" or connection.in_atomic_block:
        return False
    if raw.closed or raw.broken:
        return True
    try:
        readable, _, _ = io_select.select([raw.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _drop(connection: BaseDatabaseWrapper) -> None:
    """Close a dead connection so that the next query opens another: closed first, so a pool discards it."""
    with contextlib.suppress(Exception):
        connection.connection.close()
    with contextlib.suppress(Exception):
        connection.close()


def close_connections(timeout: float = 5.0) -> None:
    """Close the connections the database threads keep (at shutdown): each thread closes its own,
    held at a barrier so that every thread takes one of the calls."""
    workers = _executor._max_workers
    barrier = threading.Barrier(workers)

    def close() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout)
        connections.close_all()

    for future in [_executor.submit(close) for _ in range(workers)]:
        future.result()


def call_on_db_thread(function: Callable[..., Any], *args: Any) -> Any:
    """Run sync `function` where its database connection is cheapest and wait for its result. Under
    ASGI a request's thread is new each time, and so is its connection: opening one on SQLite costs
    more than the query, so there it runs on the database threads, which keep theirs. On PostgreSQL, and inside
    a transaction, it runs right here."""
    if connections["default"].in_atomic_block or not _sqlite:  # PostgreSQL's pool lends a connection for less than a thread hop
        return function(*args)
    return _executor.submit(function, *args).result()


@functools.cache
def _converters(model: type[models.Model], names: tuple[str, ...], vendor: str) -> dict[int, tuple[list[Any], Any]]:
    """The backend's converters of these columns of `model`, learnt once from a compiled query."""
    compiler = model._default_manager.values_list(*names).query.get_compiler("default")
    compiler.setup_query()
    return compiler.get_converters([expression for expression, _, _ in compiler.select])


def select(model: type[models.Model], names: tuple[str, ...], sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Rows of `sql`, written out by hand to select the columns of `model`'s fields `names` (attribute
    names, in order), each value converted as the ORM converts it (SQLite's text datetimes, UUIDs)."""
    connection = connections["default"]
    with cursor(connection) as bound:
        bound.execute(sql, list(params))
        rows = bound.fetchall()
    converters = _converters(model, names, connection.vendor)
    if not converters:
        return rows
    converted = []
    for row in rows:
        values = list(row)
        for position, (functions, expression) in converters.items():
            for convert in functions:
                values[position] = convert(values[position], expression, connection)
        converted.append(tuple(values))
    return converted


@functools.cache
def _insert_sql(model: type[models.Model], vendor: str, condition: str = "") -> tuple[str, tuple[models.Field, ...]]:
    connection = connections["default"]
    quote = connection.ops.quote_name
    fields = tuple(model._meta.concrete_fields)
    columns = ", ".join(quote(field.column) for field in fields)  # type: ignore[arg-type]  # a concrete field has a column
    placeholders = ", ".join(["%s"] * len(fields))
    values = f"SELECT {placeholders} WHERE {condition}" if condition else f"VALUES ({placeholders})"
    return f"INSERT INTO {quote(model._meta.db_table)} ({columns}) {values}", fields


def _insert(instance: models.Model, connection: BaseDatabaseWrapper, condition: str = "") -> tuple[str, list[Any]]:
    sql, fields = _insert_sql(type(instance), connection.vendor, condition)
    return sql, [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]


def insert_if(instance: models.Model, condition: str) -> tuple[str, list[Any]]:
    """The INSERT of `instance` (a new model object) as `INSERT … SELECT … WHERE condition`: the row
    is added only when `condition` holds, e.g. on what an earlier data-modifying CTE returned."""
    return _insert(instance, connections["default"], condition)


def sql_names(model: type[models.Model]) -> tuple[str, Callable[[str], str]]:
    """For SQL written out by hand: the model's table, and its field names to their columns, quoted."""
    quote = connections["default"].ops.quote_name
    meta = model._meta
    return quote(meta.db_table), lambda name: quote(meta.get_field(name).column)  # type: ignore[union-attr, arg-type]  # concrete fields


def column_field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    """A field that holds a column (get_field also answers a relation's other side)."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return field


def stored(instance: models.Model) -> None:
    """Mark `instance` as saved, as the ORM does after an INSERT it made itself."""
    instance._state.adding = False
    instance._state.db = "default"


@contextlib.contextmanager
def cursor(connection: BaseDatabaseWrapper) -> Iterator[Any]:
    """A cursor for the statements every turn runs: Django's, binding parameters on the server on PostgreSQL.

    Django's cursors on PostgreSQL bind in the client (Django's default, which the ORM's queries
    are written for): each value quoted in Python, about a quarter of a claim's client CPU. The few
    statements written out here are plain INSERT, UPDATE and SELECT, which bind on the server
    as they are. Errors are Django's, as from any cursor."""
    with connection.cursor() as django_cursor:
        if connection.vendor != "postgresql":
            yield django_cursor
            return
        import psycopg  # loaded by Django's backend on PostgreSQL: not imported on SQLite

        with connection.wrap_database_errors, psycopg.Cursor(django_cursor.cursor.connection) as bound:
            yield bound


def write(*instances: models.Model, then: str = "", params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
    """Insert `instances` (new model objects, parents before children), then run the statement
    `then` with `params`, all or nothing; the first row `then` returns (None without one)."""
    connection = connections["default"]
    statements = [_insert(instance, connection) for instance in instances]
    if then:
        statements.append((then, list(params)))
    if connection.vendor == "postgresql" and len(statements) > 1:
        *first, (last_sql, _) = statements
        ctes = ", ".join(f"w{number} AS ({sql})" for number, (sql, _) in enumerate(first))
        statements = [(f"WITH {ctes} {last_sql}", [value for _, values in statements for value in values])]
    # One statement is atomic by itself: no BEGIN and COMMIT round trips around it.
    with transaction.atomic() if len(statements) > 1 else contextlib.nullcontext(), cursor(connection) as bound:
        for sql, values in statements:
            bound.execute(sql, values)
        row = bound.fetchone() if then and bound.description else None
    for instance in instances:
        stored(instance)
    return row
