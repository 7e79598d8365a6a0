"""The converse body and answer (docs/api.md, "Converse")."""

from __future__ import annotations

from rest_framework import serializers

from agents.serializers import StrictCharField, check_not_blank
from chat.chat_apps.serializers import check_features
from chat.sessions.models import InvocationMode, TurnSource
from chat.sessions.serializers import ChatMessageUsageSerializer


class ConverseRequestSerializer(serializers.Serializer):
    """Every field checked; `features` only narrows (docs/api.md, "Features")."""

    userId = StrictCharField(required=False, allow_blank=True)
    sessionId = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    chatAppId = StrictCharField(max_length=128)
    agentId = StrictCharField(max_length=128)
    message = StrictCharField(max_length=100_000, trim_whitespace=False, validators=[check_not_blank])
    features = serializers.JSONField(validators=[check_features])
    files = serializers.ListField(child=serializers.DictField(), required=False, default=list, max_length=20)
    timezone = StrictCharField(required=False, allow_blank=True, max_length=64)
    invocationMode = serializers.ChoiceField(choices=InvocationMode.values, required=False, allow_null=True)
    source = serializers.ChoiceField(choices=TurnSource.values)  # type: ignore[assignment]  # the wire name shadows Field.source
    parentMessageId = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text=(
            "An assistant message of the session the new message follows (null: a new start); without it the "
            'turn continues the current branch (docs/api.md, "Branches").'
        ),
    )


class RegenerateRequestSerializer(serializers.Serializer):
    """`POST …/messages/{messageId}/regenerate`: the question, session, chat app and agent are the
    stored ones; the rest as converse's (docs/api.md, "Regenerating an answer")."""

    userId = StrictCharField(required=False, allow_blank=True)
    features = serializers.JSONField(required=False, default=dict, validators=[check_features])
    timezone = StrictCharField(required=False, allow_blank=True, max_length=64)


class ConverseResponseSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    response = serializers.CharField()
    sessionId = serializers.UUIDField()
    messageId = serializers.UUIDField()
    usage = ChatMessageUsageSerializer(required=False)
    citations = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text=(
            "When the agent searched knowledge bases: `{n, knowledgeBaseId, documentId, title, sourceUrl, chunkId, text}` "
            "per result the model was given."
        ),
    )
