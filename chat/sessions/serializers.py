"""Sessions' and messages' wire shapes (docs/api.md, "Sessions"), and the queries that list them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from agents.serializers import StrictCharField
from chat.sessions.models import ChatMessage, ChatSession, MessageSource, SessionStatus
from chat.sessions.traces import traces_for_users
from chatplatform.api.fields import WholeNumberField

# --- sessions, messages, feedback, converse (docs/api.md, "Sessions", "Converse") ---------------


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


class ChatMessageUsageSerializer(serializers.Serializer):
    """ChatMessageUsage: tokens and USD cost (CHAT_MODEL_PRICES, per 1,000 tokens)."""

    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    totalTokens = serializers.IntegerField()
    inputCost = serializers.FloatField()
    outputCost = serializers.FloatField()
    totalCost = serializers.FloatField()


class ChatSessionSerializer(serializers.Serializer):
    """ChatSession as docs/api.md "Sessions" lists its fields (token and cost totals included)."""

    sessionId = serializers.UUIDField()
    userId = serializers.CharField()
    chatAppId = serializers.CharField()
    agentId = serializers.CharField()
    title = serializers.CharField()
    status = serializers.ChoiceField(choices=SessionStatus.values)
    invocationMode = serializers.CharField(allow_null=True)
    source = serializers.CharField()  # type: ignore[assignment]  # the wire name shadows Field.source
    entityId = serializers.CharField(allow_null=True)
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    totalTokens = serializers.IntegerField()
    inputCost = serializers.FloatField()
    outputCost = serializers.FloatField()
    totalCost = serializers.FloatField()
    lastMessageId = serializers.UUIDField(allow_null=True)
    pinned = serializers.BooleanField()
    createDate = serializers.DateTimeField()
    lastUpdate = serializers.DateTimeField()

    def to_representation(self, session: ChatSession) -> dict[str, Any]:
        return {
            "sessionId": str(session.session_id),
            "userId": session.user_id,
            "chatAppId": session.chat_app_id,
            "agentId": session.agent_id,
            "title": session.title,
            "status": session.status,
            "invocationMode": session.invocation_mode,
            "source": session.source,
            "entityId": session.entity_id,
            "inputTokens": session.input_tokens,
            "outputTokens": session.output_tokens,
            "totalTokens": session.total_tokens,
            "inputCost": round(session.input_cost, 10),
            "outputCost": round(session.output_cost, 10),
            "totalCost": round(session.total_cost, 10),
            "lastMessageId": str(session.last_message_id) if session.last_message_id else None,
            "pinned": session.pinned_at is not None,
            "createDate": _iso(session.create_date),
            "lastUpdate": _iso(session.last_update),
        }


class ChatMessageSerializer(serializers.Serializer):
    """ChatMessage (docs/api.md, "Sessions"). `traces` only where the context asks for them: `include_traces`
    "all" as stored (the Admin API), "users" without the reasons of failures (chat.sessions.traces);
    `siblingIds` where the context gives `siblings` (a branch's: chat.sessions.selectors.branch)."""

    messageId = serializers.UUIDField()
    sessionId = serializers.UUIDField()
    userId = serializers.CharField()
    source = serializers.ChoiceField(choices=MessageSource.values)  # type: ignore[assignment]  # the wire name shadows Field.source
    message = serializers.CharField()
    model = serializers.CharField()
    usage = ChatMessageUsageSerializer(allow_null=True)
    traces = serializers.ListField(child=serializers.DictField(), required=False)
    files = serializers.ListField(child=serializers.DictField())
    verifications = serializers.ListField(child=serializers.DictField())
    executionDuration = serializers.IntegerField(allow_null=True, help_text="milliseconds")
    error = inline_serializer(
        "ChatMessageError",
        {"code": serializers.CharField(), "message": serializers.CharField()},
        required=False,
        help_text="Only on an answer that failed midway: why. Its `message` is the text streamed before.",
    )
    citations = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="Only on an answer that searched knowledge bases."
    )
    stopReason = serializers.CharField(required=False, help_text='Only on an answer its user stopped: "user".')
    timestamp = serializers.DateTimeField()
    parentMessageId = serializers.UUIDField(
        allow_null=True, help_text="The message it follows on its branch: an answer's question, a question's answer; null for the first."
    )
    siblingIds = serializers.ListField(
        child=serializers.UUIDField(),
        required=False,
        help_text="In a branch's list: the ids of the messages with the same parent, itself included, oldest first.",
    )

    def to_representation(self, message: ChatMessage) -> dict[str, Any]:
        data = {
            "messageId": str(message.message_id),
            "sessionId": str(message.session_id),
            "userId": message.user_id,
            "source": message.source,
            "message": message.message,
            "model": message.model,
            "usage": message.usage,
            "files": message.files,
            "verifications": message.verifications,
            "executionDuration": message.execution_duration,
            "timestamp": _iso(message.timestamp),
            "parentMessageId": str(message.parent_id) if message.parent_id else None,
        }
        siblings = self.context.get("siblings")
        if siblings is not None:
            data["siblingIds"] = [str(key) for key in siblings.get(message.message_id, [message.message_id])]
        if message.error:
            data["error"] = message.error
        if message.citations is not None:
            data["citations"] = message.citations
        if message.stop_reason:
            data["stopReason"] = message.stop_reason
        shown = self.context.get("include_traces")
        if shown:
            data["traces"] = message.traces if shown == "all" else traces_for_users(message.traces or [])
        return data


class SessionsQuerySerializer(serializers.Serializer):
    """GET /api/chat/sessions's parameters, for the schema (the view parses them by hand, by the same rules)."""

    userId = StrictCharField(required=False, allow_blank=True)
    chatAppId = StrictCharField(required=False, allow_blank=True)
    limit = WholeNumberField(required=False, default=20, min_value=1, max_value=100)


class SearchQuerySerializer(serializers.Serializer):
    """GET /api/chat/sessions/search's parameters (docs/api.md, "Searching one's conversations")."""

    userId = StrictCharField(required=False, allow_blank=True)
    q = StrictCharField(max_length=200, help_text="Words that must all appear in a message or a title.")
    chatAppId = StrictCharField(required=False, allow_blank=True, help_text="Only this chat app's sessions.")
    limit = WholeNumberField(required=False, default=20, min_value=1, max_value=50)


class SearchResultSerializer(serializers.Serializer):
    sessionId = serializers.UUIDField(source="session_id")
    title = serializers.CharField()
    messageId = serializers.UUIDField(source="message_id", allow_null=True, help_text="null: the title matched")
    snippet = serializers.CharField()
    lastUpdate = serializers.DateTimeField(source="last_update")


class MessagesQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    limit = WholeNumberField(required=False, default=50, min_value=1, max_value=1000)
    leafMessageId = serializers.UUIDField(
        required=False, help_text="The branch that ends at this message (default: the one of the most recently created message)."
    )


class TitleRequestSerializer(serializers.Serializer):
    REQUEST_SCHEMA_RULES = {"anyOf": [{"required": ["title"]}, {"required": ["userQuestionAsked"]}]}

    userId = StrictCharField(required=False, allow_blank=True)
    sessionId = StrictCharField(required=False, allow_blank=True, help_text="Ignored: the path names the session.")
    title = StrictCharField(required=False, max_length=200)
    userQuestionAsked = StrictCharField(required=False, max_length=10_000)
    answerToQuestionFromAgent = StrictCharField(required=False, max_length=20_000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not (attrs.get("title") or "").strip() and not attrs.get("userQuestionAsked"):
            raise serializers.ValidationError({"title": ["is required unless userQuestionAsked is given to generate one"]})
        return attrs
