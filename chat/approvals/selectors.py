"""Reads on approvals."""

from __future__ import annotations

from django.db.models import Case, IntegerField, Value, When

from chat.approvals.models import ApprovalStatus, ToolApproval
from chat.approvals.services import may_decide
from chat.sessions.models import ChatSession
from chat.users.models import ChatUser


def session_approvals(*, session: ChatSession, user: ChatUser) -> list[ToolApproval]:
    """The session's approvals this user may see, pending first, then newest first (index approval_session_status)."""
    approvals = ToolApproval.objects.filter(session=session).order_by(
        Case(When(status=ApprovalStatus.PENDING, then=Value(0)), default=Value(1), output_field=IntegerField()), "-created_at"
    )
    return [approval for approval in approvals if may_decide(user, approval, session.user_id)]
