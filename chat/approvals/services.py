"""Deciding tool calls that wait for a person (docs/api.md, "Approvals"): by the session's user,
an admin or an approver, by the worker when they expire, or when a new message supersedes them.

Whoever decides the last pending approval of a paused turn claims the turn (`resumed_at`), in
the same transaction: exactly one process goes on with it.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from chat.approvals.models import ApprovalStatus, PausedTurn, ToolApproval
from chat.users.models import ChatUser
from chatplatform.api.errors import Code, Conflict, NotFound
from chatplatform.api.permissions import is_admin

EXPIRED = "expired"
SUPERSEDED = "superseded"
SYSTEM = "system"  # who decided an approval that expired or was superseded


def pause_records(
    *, session_id: uuid.UUID, message_id: uuid.UUID, state: dict[str, Any], calls: list[dict[str, Any]], now: datetime
) -> tuple[PausedTurn, list[ToolApproval]]:
    """The records of a turn that pauses (written with its answer so far, chat.turn.handover.turn_pause):
    `calls` each `{callId, toolId, function, arguments, timeoutSeconds, approverRoles}`."""
    paused = PausedTurn(message_id=message_id, session_id=session_id, state=state, created_at=now)
    approvals = [
        ToolApproval(
            session_id=session_id,
            message_id=message_id,
            call_id=call["callId"],
            tool_id=call["toolId"],
            function=call["function"],
            arguments=call["arguments"],
            approver_roles=call["approverRoles"],
            expires_at=now + timedelta(seconds=call["timeoutSeconds"]),
            created_at=now,
        )
        for call in calls
    ]
    return paused, approvals


def may_decide(user: ChatUser, approval: ToolApproval, session_user_id: str) -> bool:
    """The session's user, an admin, or a user holding one of the approval's approverRoles."""
    return user.pk == session_user_id or is_admin(user) or bool(set(user.roles or []) & set(approval.approver_roles or []))


def approval_decide(*, approval_id: Any, session_id: uuid.UUID, user: ChatUser, approve: bool, reason: str) -> tuple[ToolApproval, bool]:
    """Decide one approval: (it, whether this decision completed its turn's: then the caller goes
    on with the turn). 404 NOT_FOUND for an approval of another session, or one the user may not
    decide; 409 ALREADY_DECIDED for one decided before."""
    with transaction.atomic():
        approval = (
            # pk=None (not a UUID) matches no approval.
            ToolApproval.objects.select_for_update().select_related("session").filter(session_id=session_id, pk=_uuid(approval_id)).first()  # type: ignore[misc]
        )
        if approval is None or not may_decide(user, approval, approval.session.user_id):
            raise NotFound(f"approval {approval_id} not found")
        if approval.status != ApprovalStatus.PENDING:
            raise Conflict(f"approval {approval.pk} is already {approval.status}", code=Code.ALREADY_DECIDED)
        _decide(approval, approve=approve, reason=reason, by=user.pk)
        return approval, _claim_if_decided(approval.message_id)


def approvals_expire(*, now: datetime | None = None) -> list[uuid.UUID]:
    """Deny every pending approval past its deadline (reason `expired`); the paused turns that are
    now decided, claimed for the caller to go on with."""
    now = now or timezone.now()
    ready = []
    with transaction.atomic():
        expired = list(ToolApproval.objects.select_for_update(skip_locked=True).filter(status=ApprovalStatus.PENDING, expires_at__lt=now))
        for approval in expired:
            _decide(approval, approve=False, reason=EXPIRED, by=SYSTEM)
        for message_id in {approval.message_id for approval in expired}:
            if _claim_if_decided(message_id):
                ready.append(message_id)
    return ready


def approvals_supersede(*, session_id: uuid.UUID) -> list[uuid.UUID]:
    """A new message on the session denies its pending approvals (reason `superseded`); the paused
    turns now decided, claimed for the caller to go on with (before the new message)."""
    ready = []
    with transaction.atomic():
        pending = list(ToolApproval.objects.select_for_update().filter(session_id=session_id, status=ApprovalStatus.PENDING))
        for approval in pending:
            _decide(approval, approve=False, reason=SUPERSEDED, by=SYSTEM)
        for message_id in {approval.message_id for approval in pending}:
            if _claim_if_decided(message_id):
                ready.append(message_id)
    return ready


def decisions(message_id: uuid.UUID) -> dict[str, tuple[bool, str]]:
    """call id → (approved, reason) of a paused turn's approvals."""
    return {
        approval.call_id: (approval.status == ApprovalStatus.APPROVED, approval.reason)
        for approval in ToolApproval.objects.filter(message_id=message_id)
    }


def paused_turn_done(*, message_id: uuid.UUID) -> None:
    """The turn went on: forget what it needed (its approvals stay, as the record of who decided)."""
    PausedTurn.objects.filter(pk=message_id).delete()


def _decide(approval: ToolApproval, *, approve: bool, reason: str, by: str) -> None:
    approval.status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
    approval.reason, approval.decided_by, approval.decided_at = reason, by, timezone.now()
    approval.save(update_fields=["status", "reason", "decided_by", "decided_at"])


def _claim_if_decided(message_id: uuid.UUID) -> bool:
    if ToolApproval.objects.filter(message_id=message_id, status=ApprovalStatus.PENDING).exists():
        return False
    return PausedTurn.objects.filter(pk=message_id, resumed_at__isnull=True).update(resumed_at=timezone.now()) == 1


def _uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (ValueError, TypeError):
        return None
