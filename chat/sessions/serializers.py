"""Sessions' and messages' wire shapes (docs/api.md, "Sessions"), and the queries that list them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from agents.serializers import StrictCharField
from chat.sessions.models import ChatMessage, ChatSession, MessageSource, SessionStatus
from chat.sessions.traces import traces_for_users
from chatplatform.api.fields import WholeNumberField
from chatplatform.api.shapes import OutputSerializer

# --- sessions, messages, feedback, converse (docs/api.md, "Sessions", "Converse") ---------------


class ChatMessageUsageSerializer(serializers.Serializer):
    """ChatMessageUsage: tokens and USD cost (CHAT_MODEL_PRICES, per 1,000 tokens)."""

    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    totalTokens = serializers.IntegerField()
    inputCost = serializers.FloatField()
    outputCost = serializers.FloatField()
    totalCost = serializers.FloatField()


@extend_schema_field(ChatMessageUsageSerializer(allow_null=True))
class _UsageField(serializers.DictField):
    """A message's usage, stored as the document its wire shape is."""


def _cost(value: float) -> float:
    # Sums of float costs carry binary noise (0.30000000000000004): ten decimals are more than a cent needs.
    return round(value, 10)


class ChatSessionSerializer(OutputSerializer):
    """ChatSession as docs/api.md "Sessions" lists its fields (token and cost totals included). Reads a
    session or the list's records (chat.sessions.selectors.SessionRecord): the model's attribute names."""

    sessionId = serializers.UUIDField(source="session_id")
    userId = serializers.CharField(source="user_id")
    chatAppId = serializers.CharField(source="chat_app_id")
    agentId = serializers.CharField(source="agent_id")
    title = serializers.CharField()
    status = serializers.ChoiceField(choices=SessionStatus.values)
    invocationMode = serializers.CharField(source="invocation_mode", allow_null=True)
    source = serializers.CharField()  # type: ignore[assignment]  # the wire name shadows Field.source
    entityId = serializers.CharField(source="entity_id", allow_null=True)
    inputTokens = serializers.IntegerField(source="input_tokens")
    outputTokens = serializers.IntegerField(source="output_tokens")
    totalTokens = serializers.IntegerField(source="total_tokens")
    inputCost = serializers.SerializerMethodField(method_name="get_input_cost")
    outputCost = serializers.SerializerMethodField(method_name="get_output_cost")
    totalCost = serializers.SerializerMethodField(method_name="get_total_cost")
    lastMessageId = serializers.UUIDField(source="last_message_id", allow_null=True)
    pinned = serializers.SerializerMethodField()
    createDate = serializers.DateTimeField(source="create_date")
    lastUpdate = serializers.DateTimeField(source="last_update")

    def get_input_cost(self, session: ChatSession) -> float:
        return _cost(session.input_cost)

    def get_output_cost(self, session: ChatSession) -> float:
        return _cost(session.output_cost)

    def get_total_cost(self, session: ChatSession) -> float:
        return _cost(session.total_cost)

    def get_pinned(self, session: ChatSession) -> bool:
        return session.pinned_at is not None


class ChatMessageSerializer(OutputSerializer):
    """ChatMessage (docs/api.md, "Sessions"). `traces` only where the context asks for them: `include_traces`
    "all" as stored (the Admin API), "users" without the reasons of failures (chat.sessions.traces);
    `siblingIds` where the context gives `siblings` (a branch's: chat.sessions.selectors.branch)."""

    OMIT_WHEN_NULL = ("error", "citations", "stopReason", "siblingIds", "traces")
    BLANK_AS_NULL = ("stopReason",)

    messageId = serializers.UUIDField(source="message_id")
    sessionId = serializers.UUIDField(source="session_id")
    userId = serializers.CharField(source="user_id")
    source = serializers.ChoiceField(choices=MessageSource.values)  # type: ignore[assignment]  # the wire name shadows Field.source
    message = serializers.CharField()
    model = serializers.CharField()
    usage = _UsageField(allow_null=True)
    traces = serializers.SerializerMethodField()
    files = serializers.ListField(child=serializers.DictField())
    verifications = serializers.ListField(child=serializers.DictField())
    executionDuration = serializers.IntegerField(source="execution_duration", allow_null=True, help_text="milliseconds")
    error = serializers.SerializerMethodField(
        help_text="Only on an answer that failed midway: why. Its `message` is the text streamed before."
    )
    citations = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="Only on an answer that searched knowledge bases."
    )
    stopReason = serializers.CharField(source="stop_reason", required=False, help_text='Only on an answer its user stopped: "user".')
    timestamp = serializers.DateTimeField()
    parentMessageId = serializers.UUIDField(
        source="parent_id",
        allow_null=True,
        help_text="The message it follows on its branch: an answer's question, a question's answer; null for the first.",
    )
    siblingIds = serializers.SerializerMethodField(
        method_name="get_sibling_ids",
        help_text="In a branch's list: the ids of the messages with the same parent, itself included, oldest first.",
    )

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_traces(self, message: ChatMessage) -> list[dict[str, Any]] | None:
        shown = self.context.get("include_traces")
        if not shown:
            return None
        return message.traces if shown == "all" else traces_for_users(message.traces or [])

    @extend_schema_field(inline_serializer("ChatMessageError", {"code": serializers.CharField(), "message": serializers.CharField()}))
    def get_error(self, message: ChatMessage) -> dict[str, Any] | None:
        return message.error or None

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_sibling_ids(self, message: ChatMessage) -> list[str] | None:
        siblings = self.context.get("siblings")
        if siblings is None:
            return None
        return [str(key) for key in siblings.get(message.message_id, [message.message_id])]


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
    throughMessageId = serializers.UUIDField(
        required=False,
        help_text="The branch through this message, down to its most recently created descendant: a version with what followed it.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs.get("leafMessageId") and attrs.get("throughMessageId"):
            raise serializers.ValidationError({"throughMessageId": ["cannot be given with leafMessageId"]})
        return attrs


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
