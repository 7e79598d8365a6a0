"""Approvals' wire shapes (docs/api.md, "Approvals")."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from chat.approvals.models import ApprovalStatus, ToolApproval


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class ToolApprovalSerializer(serializers.Serializer):
    approvalId = serializers.UUIDField()
    sessionId = serializers.UUIDField()
    messageId = serializers.UUIDField(help_text="the answer that waits for it")
    toolId = serializers.CharField()
    function = serializers.CharField()
    arguments = serializers.DictField()
    status = serializers.ChoiceField(choices=ApprovalStatus.values)
    reason = serializers.CharField(help_text="why it was denied (expired, superseded, or what the person said)")
    decidedBy = serializers.CharField(allow_null=True)
    decidedAt = serializers.DateTimeField(allow_null=True)
    expiresAt = serializers.DateTimeField()
    createdAt = serializers.DateTimeField()

    def to_representation(self, approval: ToolApproval) -> dict[str, Any]:
        return {
            "approvalId": str(approval.approval_id),
            "sessionId": str(approval.session_id),
            "messageId": str(approval.message_id),
            "toolId": approval.tool_id,
            "function": approval.function,
            "arguments": approval.arguments,
            "status": approval.status,
            "reason": approval.reason,
            "decidedBy": approval.decided_by or None,
            "decidedAt": _iso(approval.decided_at),
            "expiresAt": _iso(approval.expires_at),
            "createdAt": _iso(approval.created_at),
        }


class DecisionSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "deny"], error_messages={"invalid_choice": "must be approve or deny"})
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    userId = serializers.CharField(required=False, allow_blank=True)
