"""Share links' wire shapes (docs/api.md, "Share links")."""

from __future__ import annotations

from rest_framework import serializers

from chat.sessions.models import MessageSource


class SharedMessageSerializer(serializers.Serializer):
    """What a share shows of a message: no usage, traces, files or ids of people."""

    messageId = serializers.UUIDField(source="message_id")
    source = serializers.ChoiceField(choices=MessageSource.values)  # type: ignore[assignment]  # the wire name shadows Field.source
    message = serializers.CharField()
    citations = serializers.ListField(child=serializers.DictField(), allow_null=True)
    timestamp = serializers.DateTimeField()


class SharedSessionSerializer(serializers.Serializer):
    shareId = serializers.CharField(source="share_id")
    title = serializers.CharField()
    chatAppId = serializers.CharField(source="chat_app_id")
    agentId = serializers.CharField(source="agent_id")
    createDate = serializers.DateTimeField(source="session.create_date")
    sharedAt = serializers.DateTimeField(source="shared_at")
