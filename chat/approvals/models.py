"""Tool calls that wait for a person (docs/api.md, "Approvals"): each call's approval, and the
paused turn each belongs to, with what it needs to go on. Both survive a restart of every process."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from chat.sessions.models import ChatSession


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DENIED = "denied", "Denied"


class PausedTurn(models.Model):
    """A turn whose model asked for calls that wait for approval: its answer so far is stored
    (`message_id`), and `state` holds the rest (the model's conversation, the prompt, usage and
    traces so far, the request that started it), so that any process can go on once every
    approval of it is decided. `resumed_at` is set by the one that goes on."""

    message_id = models.UUIDField("messageId", primary_key=True)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="paused_turns")
    state = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)
    resumed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "paused turn"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"turn {self.message_id} of {self.session_id}"


class ToolApproval(models.Model):
    """One tool call waiting for (or decided by) a person."""

    approval_id = models.UUIDField("approvalId", primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: approval_session_status starts with it.
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="approvals", db_index=False)
    message_id = models.UUIDField("messageId", help_text="the answer that waits for it")
    call_id = models.CharField(max_length=200)
    tool_id = models.CharField("toolId", max_length=200)
    function = models.CharField(max_length=100)
    arguments = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING)
    reason = models.TextField(blank=True, default="")
    approver_roles = models.JSONField(default=list, blank=True)
    decided_by = models.CharField(max_length=255, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "tool approval"
        ordering = ["-created_at"]
        indexes = [
            # GET /api/chat/sessions/{sessionId}/approvals, and a new message superseding the pending ones
            models.Index(fields=["session", "status", "-created_at"], name="approval_session_status"),
            # The worker's expiry: pending approvals by deadline
            models.Index(fields=["expires_at"], condition=models.Q(status="pending"), name="approval_pending_expiry"),
            # The paused turn's approvals, when one is decided
            models.Index(fields=["message_id"], name="approval_message"),
        ]

    def __str__(self) -> str:
        return f"{self.function} ({self.status}) in {self.session_id}"
