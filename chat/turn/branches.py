"""Where a turn's user message goes on its session's message tree, and the history the model is
given before it: the path from the session's start to the message's parent, the newest
HISTORY_LIMIT (docs/api.md, "Branches"). Run by the session's ticket lock (chat.turn.lock) once a
turn's ticket is served, so that a message continuing the current branch follows the answer of the
turn served before it."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from chat.sessions.models import ChatMessage, MessageSource
from chat.sessions.selectors import branch_texts
from chatplatform import db

HISTORY_LIMIT = 100  # earlier messages a turn sends to the model (the newest ones)


@dataclass(frozen=True)
class Follows:
    """Where a turn's user message goes on its session's message tree (docs/api.md, "Branches"):
    after `parent_id` (None: a new start), or, `current`, after the session's latest message when
    it is stored. `question`: a regenerated answer's question, stored already: the turn stores no
    user message and answers that one again."""

    parent_id: uuid.UUID | None = None
    current: bool = True
    question: ChatMessage | None = None


CURRENT_BRANCH = Follows()


def new_user_message(session_id: uuid.UUID, *, user_id: str, message: str, files: list[Any], now: datetime) -> ChatMessage:
    return ChatMessage(session_id=session_id, user_id=user_id, source=MessageSource.USER, message=message, files=files, timestamp=now)


def earlier_messages(session_id: uuid.UUID, *, user_id: str, history: list[tuple[str, str]], now: datetime) -> list[ChatMessage]:
    """A new session's history as its messages, a microsecond apart before `now` so that they list in order."""
    return [
        ChatMessage(
            session_id=session_id,
            user_id=user_id,
            source=MessageSource.USER if source == MessageSource.USER else MessageSource.ASSISTANT,
            message=text,
            timestamp=now - timedelta(microseconds=len(history) - index),
        )
        for index, (source, text) in enumerate(history)
    ]


def history_before(session_id: uuid.UUID, *, before: ChatMessage, follows: Follows) -> list[tuple[str, str]]:
    """What the model is given before the turn's user message `before` (stored already): the path
    from the session's start to its parent, the newest HISTORY_LIMIT, oldest first (docs/api.md,
    "Branches"). A message that continues the current branch is hung below the session's latest
    other message first."""
    if follows.current and follows.question is None:
        before.parent_id = _follow_latest(session_id, before)
    return branch_texts(leaf_id=before.parent_id, limit=HISTORY_LIMIT)


def _follow_latest(session_id: uuid.UUID, message: ChatMessage) -> uuid.UUID | None:
    """Make `message` (stored) the child of the session's latest other message; that message's id.
    A statement of its own, after the ticket: it sees the answer of the turn served before."""
    connection = connections["default"]
    field = functools.partial(db.column_field, ChatMessage)
    key = field("message_id").get_db_prep_value(message.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(_follow_latest_sql(connection.vendor), [field("session").get_db_prep_value(session_id, connection), key, key])
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return None
    return row[0] if isinstance(row[0], uuid.UUID) else uuid.UUID(str(row[0]))


@functools.cache
def _follow_latest_sql(vendor: str) -> str:
    """`_follow_latest`'s statement, written out once: every turn on a session runs it (docs/decisions.md)."""
    table, column = db.sql_names(ChatMessage)
    key, parent, timestamp = column("message_id"), column("parent"), column("timestamp")
    latest = (
        f"SELECT latest.{key} FROM {table} AS latest WHERE latest.{column('session')} = %s AND latest.{key} <> %s "
        f"ORDER BY latest.{timestamp} DESC, latest.{key} DESC LIMIT 1"
    )
    return f"UPDATE {table} SET {parent} = ({latest}) WHERE {key} = %s RETURNING {parent}"
