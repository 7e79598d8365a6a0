"""The end of a turn's hold on its session (docs/decisions.md, "The session's ticket lock"): its
answer stored, its usage added to the session's totals and the session handed to the next ticket,
in one transaction; a turn that pauses for approvals keeps what it needs to go on in the same one.
The session's side of a finished turn runs on every turn, so it is written out once per database
(chatplatform.db) rather than compiled through the ORM each time."""

from __future__ import annotations

import functools
import uuid
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from chat.approvals.models import PausedTurn, ToolApproval
from chat.sessions.models import ChatMessage, ChatSession, MessageSource
from chat.sessions.services import SESSION_TOTALS, usage_increments
from chatplatform import db


def turn_finish_continued(
    *,
    answer_id: uuid.UUID,
    session_id: uuid.UUID,
    ticket: int,
    text: str,
    usage: dict[str, Any],
    added_usage: dict[str, Any],
    traces: list[dict[str, Any]],
    execution_duration: int,
    error: dict[str, str] | None = None,
    citations: list[dict[str, Any]] | None = None,
    stop_reason: str | None = None,
) -> None:
    """Complete an answer stored when its turn paused (the whole answer now, `usage` its whole
    usage), add `added_usage` to the session's totals and hand the session on: one transaction."""
    now = timezone.now()
    with transaction.atomic():
        ChatMessage.objects.filter(pk=answer_id).update(
            message=text,
            usage=usage,
            traces=traces,
            execution_duration=execution_duration,
            error=error,
            citations=citations,
            stop_reason=stop_reason,
        )
        ChatSession.objects.filter(pk=session_id).update(**usage_increments(added_usage), last_message_id=answer_id, last_update=now)
        ChatSession.objects.filter(pk=session_id, turn_serving=ticket).update(turn_serving=ticket + 1, turn_started=now)


def turn_pause(*, paused: PausedTurn, approvals: list[ToolApproval], answer: dict[str, Any], continued: bool) -> None:
    """A turn waits for approvals: its answer so far stored (`answer`: turn_finish's arguments, or
    turn_finish_continued's when it had paused before), the session handed on, and what it needs
    to go on kept: one transaction."""
    with transaction.atomic():
        if continued:
            turn_finish_continued(**answer)
        else:
            turn_finish(**answer)
        PausedTurn.objects.filter(pk=paused.pk).delete()
        paused.save(force_insert=True)
        ToolApproval.objects.bulk_create(approvals)


def turn_finish(
    *,
    answer_id: uuid.UUID,
    session_id: uuid.UUID,
    ticket: int,
    user_id: str,
    text: str,
    model: str,
    usage: dict[str, Any],
    traces: list[dict[str, Any]],
    verifications: list[dict[str, Any]],
    execution_duration: int,
    title: str | None = None,
    error: dict[str, str] | None = None,
    citations: list[dict[str, Any]] | None = None,
    stop_reason: str | None = None,
    parent_id: uuid.UUID | None = None,
) -> tuple[ChatMessage, bool]:
    """Store the answer (`error` when it failed midway: the text is what was streamed) as the child
    of its question `parent_id` (docs/api.md, "Branches"), add its
    usage to the session's totals, hand the session to the next ticket and, given a `title`,
    title a still untitled session: one transaction. (answer, titled)."""
    now = timezone.now()
    answer = ChatMessage(
        message_id=answer_id,
        session_id=session_id,
        user_id=user_id,
        source=MessageSource.ASSISTANT,
        message=text,
        model=model,
        usage=usage,
        traces=traces,
        verifications=verifications,
        execution_duration=execution_duration,
        error=error,
        citations=citations,
        stop_reason=stop_reason,
        timestamp=now,
        parent_id=parent_id,
    )
    connection = connections["default"]
    field = functools.partial(db.column_field, ChatSession)
    uuid_value, moment = field("session_id").get_db_prep_value, field("last_update").get_db_prep_value
    params = [usage[key] for _, key in SESSION_TOTALS]
    params += [uuid_value(answer.pk, connection), moment(now, connection)]
    params += [ticket, ticket + 1, ticket, moment(now, connection), (title or "")[:200], uuid_value(session_id, connection)]
    # The answer's INSERT and the session's UPDATE: one round trip on PostgreSQL.
    row = db.write(answer, then=_finish_session_sql(connection.vendor), params=params)
    return answer, bool(title) and row is not None and row[0] == title


@functools.cache
def _finish_session_sql(vendor: str) -> str:
    """The session's side of a finished turn as one UPDATE, written out once from the model's own
    table and column names: every turn runs it, and compiling it through F()/Case() each time cost
    a noticeable share of a turn (docs/decisions.md). The expressions read the row as it was before
    the UPDATE (SQL's rule, PostgreSQL's and SQLite's)."""
    table, column = db.sql_names(ChatSession)

    serving, started, title = column("turn_serving"), column("turn_started"), column("title")
    assignments = [f"{column(name)} = {column(name)} + %s" for name, _ in SESSION_TOTALS]
    assignments += [
        f"{column('last_message_id')} = %s",
        f"{column('last_update')} = %s",
        # Hand the session on, unless the lease ran out and a later ticket took it over.
        f"{serving} = CASE WHEN {serving} = %s THEN %s ELSE {serving} END",
        f"{started} = CASE WHEN {serving} = %s THEN %s ELSE {started} END",
        # A title the user set meanwhile wins.
        f"{title} = CASE WHEN {title} = '' THEN %s ELSE {title} END",
    ]
    return f"UPDATE {table} SET {', '.join(assignments)} WHERE {column('session_id')} = %s RETURNING {title}"
