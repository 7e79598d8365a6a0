"""Wire shapes of deletion, erasure, export and usage (docs/api.md, "Your data")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.serializers import StrictCharField
from chat.feedback.serializers import FeedbackSerializer
from chat.files.serializers import ChatMessageFileSerializer
from chat.governance.models import SITE
from chat.governance.selectors import UserExport
from chat.governance.usage import Limit
from chat.sessions.models import ChatSession
from chat.sessions.serializers import ChatMessageSerializer, ChatSessionSerializer
from chat.users.serializers import ChatUserSerializer
from chatplatform.api.shapes import OutputSerializer


class UsageQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    chatAppId = StrictCharField(required=False, allow_blank=True, help_text="the chat app's usage and limits; without it, all chat apps'")


class UsageLimitSerializer(OutputSerializer):
    """A limit in force (chat.governance.usage.Limit)."""

    OMIT_WHEN_NULL = ("chatAppId", "tokens", "costUsd")

    scope = serializers.SerializerMethodField()
    chatAppId = serializers.CharField(source="chat_app_id", required=False)
    tokens = serializers.IntegerField(required=False)
    costUsd = serializers.FloatField(source="cost_usd", required=False)

    @extend_schema_field(serializers.ChoiceField(choices=["site", "chatApp"]))
    def get_scope(self, limit: Limit) -> str:
        return "site" if limit.scope == SITE else "chatApp"


class UsagePeriodSerializer(OutputSerializer):
    tokens = serializers.IntegerField()
    costUsd = serializers.FloatField(source="cost_usd")
    limits = UsageLimitSerializer(many=True)
    resetsAt = serializers.DateTimeField(source="resets_at")


class UsageSerializer(OutputSerializer):
    """The user's usage (chat.governance.usage.UsageSummary)."""

    daily = UsagePeriodSerializer()
    monthly = UsagePeriodSerializer()


class ExportedWidgetDataSerializer(OutputSerializer):
    scope = serializers.CharField()
    tag = serializers.CharField()
    data = serializers.JSONField()  # type: ignore[assignment]  # the wire name shadows Serializer.data
    lastUpdate = serializers.DateTimeField(source="last_update")


class ExportedFileSerializer(ChatMessageFileSerializer):
    """A file's record: the bytes at its `url`."""

    chatAppId = serializers.CharField(source="chat_app_id")
    createDate = serializers.DateTimeField(source="create_date")


class ExportedSessionSerializer(ChatSessionSerializer):
    """A session with all its messages, oldest first (context: `messages` by session, `siblings`)."""

    messages = serializers.SerializerMethodField()

    @extend_schema_field(ChatMessageSerializer(many=True))
    def get_messages(self, session: ChatSession) -> list[dict[str, Any]]:
        found = self.context["messages"].get(session.pk, [])
        return list(ChatMessageSerializer(found, many=True, context={"siblings": self.context["siblings"]}).data)


class UserExportSerializer(OutputSerializer):
    """The export document (chat.governance.selectors.UserExport): each part as the Chat API lists it."""

    user = ChatUserSerializer()
    prefs = serializers.JSONField(source="user.prefs")
    widgetData = ExportedWidgetDataSerializer(source="widget_data", many=True)
    sessions = serializers.SerializerMethodField()
    feedback = FeedbackSerializer(many=True)
    files = ExportedFileSerializer(many=True)

    @extend_schema_field(ExportedSessionSerializer(many=True))
    def get_sessions(self, export: UserExport) -> list[dict[str, Any]]:
        context = {"messages": export.messages, "siblings": export.siblings}
        return list(ExportedSessionSerializer(export.sessions, many=True, context=context).data)
