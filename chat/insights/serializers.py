"""Insights' wire shapes (docs/api.md, "Session insights")."""

from __future__ import annotations

from rest_framework import serializers

from chatplatform.api.shapes import OutputSerializer

# --- insights ----------------------------------------------------------------------------------------


class InsightsSerializer(OutputSerializer):
    """The session insights record (docs/api.md, "Session insights"), or null while the session has none."""

    model = serializers.CharField()
    version = serializers.CharField()
    usage = serializers.DictField()
    generatedAt = serializers.DateTimeField(source="generated_at")
    lastAnalyzedMessageId = serializers.UUIDField(source="last_analyzed_message_id", allow_null=True)
    scoring = serializers.DictField()
    detailMarkdown = serializers.CharField(source="detail_markdown")


class AnalysisSerializer(OutputSerializer):
    """Where the session's analysis stands: `status` due|running|done|failed, with the last error."""

    BLANK_AS_NULL = ("error",)

    status = serializers.CharField(source="analysis_status")
    attempts = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    requestedAt = serializers.DateTimeField(source="requested_at")
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
