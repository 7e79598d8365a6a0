"""Wire shapes of deletion, erasure, export and usage (docs/api.md, "Your data")."""

from __future__ import annotations

from rest_framework import serializers

from agents.serializers import StrictCharField


class UsageQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    chatAppId = StrictCharField(required=False, allow_blank=True, help_text="the chat app's usage and limits; without it, all chat apps'")


class UsageLimitSerializer(serializers.Serializer):
    scope = serializers.ChoiceField(choices=["site", "chatApp"])
    chatAppId = serializers.CharField(required=False)
    tokens = serializers.IntegerField(required=False)
    costUsd = serializers.FloatField(required=False)


class UsagePeriodSerializer(serializers.Serializer):
    tokens = serializers.IntegerField()
    costUsd = serializers.FloatField()
    limits = UsageLimitSerializer(many=True)
    resetsAt = serializers.DateTimeField()


class UsageSerializer(serializers.Serializer):
    daily = UsagePeriodSerializer()
    monthly = UsagePeriodSerializer()


class UserExportSerializer(serializers.Serializer):
    """The export document: each part as the Chat API lists it."""

    user = serializers.JSONField()
    prefs = serializers.JSONField()
    widgetData = serializers.ListField(child=serializers.JSONField())
    sessions = serializers.ListField(child=serializers.JSONField(), help_text="each session with its `messages`, oldest first")
    feedback = serializers.ListField(child=serializers.JSONField())
    files = serializers.ListField(child=serializers.JSONField(), help_text="records; the bytes at each `url`")
