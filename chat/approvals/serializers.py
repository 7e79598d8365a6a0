"""Approvals' wire shapes (docs/api.md, "Approvals")."""

from __future__ import annotations

from rest_framework import serializers

from chat.approvals.models import ApprovalStatus
from chatplatform.api.shapes import OutputSerializer


class ToolApprovalSerializer(OutputSerializer):
    BLANK_AS_NULL = ("decidedBy",)

    approvalId = serializers.UUIDField(source="approval_id")
    sessionId = serializers.UUIDField(source="session_id")
    messageId = serializers.UUIDField(source="message_id", help_text="the answer that waits for it")
    toolId = serializers.CharField(source="tool_id")
    function = serializers.CharField()
    arguments = serializers.DictField()
    status = serializers.ChoiceField(choices=ApprovalStatus.values)
    reason = serializers.CharField(help_text="why it was denied (expired, superseded, or what the person said)")
    decidedBy = serializers.CharField(source="decided_by", allow_null=True)
    decidedAt = serializers.DateTimeField(source="decided_at", allow_null=True)
    expiresAt = serializers.DateTimeField(source="expires_at")
    createdAt = serializers.DateTimeField(source="created_at")


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "deny"], error_messages={"invalid_choice": "must be approve or deny"})
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    userId = serializers.CharField(required=False, allow_blank=True)
