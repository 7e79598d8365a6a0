"""Reads on approvals."""

from __future__ import annotations

import functools
import uuid

from django.db import connections, models
from django.db.models import Case, IntegerField, Value, When

from chat.approvals.models import ApprovalStatus, ToolApproval
from chat.approvals.services import may_decide
from chat.sessions.models import ChatSession
from chat.users.models import ChatUser
from chatplatform import db


def session_approvals(*, session: ChatSession, user: ChatUser) -> list[ToolApproval]:
    """The session's approvals this user may see, pending first, then newest first (index approval_session_status)."""
    approvals = ToolApproval.objects.filter(session=session).order_by(
        Case(When(status=ApprovalStatus.PENDING, then=Value(0)), default=Value(1), output_field=IntegerField()), "-created_at"
    )
    return [approval for approval in approvals if may_decide(user, approval, session.user_id)]


def session_waits_for_approval(session_id: uuid.UUID) -> bool:
    """Whether the session has a pending approval (index approval_session_status). Every turn on a
    session asks: the query is written out once, not compiled by the ORM each time (docs/decisions.md,
    "Where a turn's CPU goes")."""
    connection = connections["default"]
    session = ToolApproval._meta.get_field("session")
    assert isinstance(session, models.Field)
    with db.cursor(connection) as cursor:
        cursor.execute(_pending_sql(connection.vendor), [session.get_db_prep_value(session_id, connection), ApprovalStatus.PENDING.value])
        return cursor.fetchone() is not None


@functools.cache
def _pending_sql(vendor: str) -> str:
    table, column = db.sql_names(ToolApproval)
    return f"SELECT 1 FROM {table} WHERE {column('session')} = %s AND {column('status')} = %s LIMIT 1"
