"""Insights' wire shapes (docs/api.md, "Session insights")."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from chat.insights.models import SessionInsight
from chat.sessions.serializers import _iso

# --- insights ----------------------------------------------------------------------------------------


class InsightsSerializer(serializers.Serializer):
    """The session insights record (docs/api.md, "Session insights"), or null while the session has none."""

    model = serializers.CharField()
    version = serializers.CharField()
    usage = serializers.DictField()
    generatedAt = serializers.DateTimeField()
    lastAnalyzedMessageId = serializers.CharField(allow_null=True)
    scoring = serializers.DictField()
    detailMarkdown = serializers.CharField()

    def to_representation(self, insight: SessionInsight) -> dict[str, Any]:
        return {
            "model": insight.model,
            "version": insight.version,
            "usage": insight.usage,
            "generatedAt": _iso(insight.generated_at),
            "lastAnalyzedMessageId": str(insight.last_analyzed_message_id) if insight.last_analyzed_message_id else None,
            "scoring": insight.scoring,
            "detailMarkdown": insight.detail_markdown,
        }


class AnalysisSerializer(serializers.Serializer):
    """Where the session's analysis stands: `status` due|running|done|failed, with the last error."""

    status = serializers.CharField()
    attempts = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    requestedAt = serializers.DateTimeField()
    finishedAt = serializers.DateTimeField(allow_null=True)

    def to_representation(self, insight: SessionInsight) -> dict[str, Any]:
        return {
            "status": insight.analysis_status,
            "attempts": insight.attempts,
            "error": insight.error or None,
            "requestedAt": _iso(insight.requested_at),
            "finishedAt": _iso(insight.finished_at),
        }
