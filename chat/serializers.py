"""Wire shapes of chat records: SPEC.md's camelCase names mapped to the models' snake_case."""

from __future__ import annotations

import re
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import PolymorphicProxySerializer, inline_serializer
from rest_framework import serializers

from agents.models import AgentDefinition, TestType
from agents.serializers import StrictCharField, check_not_blank, check_object, error_at
from chat.features import FEATURES_SCHEMA, InvalidFeatures, validate_features
from chat.models import (
    ApplyRulesAs,
    ChatApp,
    ChatAppMode,
    ChatMessage,
    ChatSession,
    ChatSessionFeedback,
    ChatUser,
    CommentStatus,
    CommentType,
    FeedbackComment,
    FeedbackSeverity,
    FeedbackStatus,
    FeedbackType,
    InvocationMode,
    MessageSource,
    SessionInsight,
    SessionStatus,
    TurnSource,
    UserType,
)
from chatplatform.api.fields import StrictBooleanField
from chatplatform.api.schema import documented


class ChatUserSerializer(serializers.Serializer):
    """ChatUser on the wire (CONTRACT §3). The declared fields document the schema; the
    representation is built directly because a user is rendered on hot paths."""

    userId = serializers.CharField()
    email = serializers.CharField()
    firstName = serializers.CharField()
    lastName = serializers.CharField()
    userType = serializers.ChoiceField(choices=UserType.values)
    customData = serializers.DictField()
    roles = serializers.ListField(child=serializers.CharField())
    createDate = serializers.DateTimeField()
    lastUpdate = serializers.DateTimeField()

    def to_representation(self, user: ChatUser) -> dict[str, Any]:
        return {
            "userId": user.user_id,
            "email": user.email,
            "firstName": user.first_name,
            "lastName": user.last_name,
            "userType": user.user_type,
            "customData": user.custom_data,
            "roles": user.roles,
            "createDate": user.create_date.isoformat().replace("+00:00", "Z"),
            "lastUpdate": user.last_update.isoformat().replace("+00:00", "Z"),
        }


class ChatUserLiteSerializer(serializers.Serializer):
    """ChatUserLite: the fields an admin needs to pick a user."""

    userId = serializers.CharField()
    email = serializers.CharField()
    firstName = serializers.CharField()
    lastName = serializers.CharField()
    userType = serializers.ChoiceField(choices=UserType.values)

    def to_representation(self, user: ChatUser) -> dict[str, Any]:
        return {
            "userId": user.user_id,
            "email": user.email,
            "firstName": user.first_name,
            "lastName": user.last_name,
            "userType": user.user_type,
        }


class UserIdQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)


@documented({"type": "object"})
def _check_prefs(value: Any) -> None:
    """A JSON object: user prefs, a widget's data."""
    if not isinstance(value, dict):
        raise serializers.ValidationError("must be a JSON object")


class PrefsUpdateSerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    prefs = serializers.JSONField(validators=[_check_prefs])
    partial = StrictBooleanField(required=False, default=False)


class UserSearchSerializer(serializers.Serializer):
    userIdPartial = StrictCharField(required=False, allow_blank=True, max_length=255)
    limit = serializers.IntegerField(required=False, default=20, min_value=1, max_value=100)


# --- chat apps (CONTRACT §5) -----------------------------------------------------------------

CHAT_APP_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# Sent back by clients that post a chat app they read; the service owns them.
CHAT_APP_SERVER_MANAGED_FIELDS = frozenset({"createDate", "lastUpdate"})


def _distinct_choices(value: Any, allowed: list[str]) -> list[str]:
    if not isinstance(value, list):
        raise serializers.ValidationError(f"must be a list of {', '.join(allowed)}")
    for index, item in enumerate(value):
        if item not in allowed:
            raise error_at((index,), f"must be one of {', '.join(allowed)}")
    if len(set(value)) != len(value):
        raise serializers.ValidationError("lists a value more than once")
    return value


def _check_chat_app_id(value: str) -> None:
    if not CHAT_APP_ID_PATTERN.match(value):
        raise serializers.ValidationError("must be 1 to 128 letters, digits, hyphens or underscores")


AGENT_NOT_FOUND = "agent_not_found"


def _check_agent_exists(value: str) -> None:
    if not AgentDefinition.objects.filter(agent_id=value).exists():
        raise serializers.ValidationError(f"agent {value} does not exist", code=AGENT_NOT_FOUND)


@documented({"type": "array", "items": {"type": "string", "enum": UserType.values}, "uniqueItems": True})
def _check_user_types(value: Any) -> None:
    _distinct_choices(value, UserType.values)


@documented({"type": "array", "items": {"type": "string", "minLength": 1}})
def _check_user_roles(value: Any) -> None:
    if not isinstance(value, list) or not all(isinstance(role, str) and role for role in value):
        raise serializers.ValidationError("must be a list of non-empty strings")


@documented({"type": "array", "items": {"type": "string", "enum": ChatAppMode.values}, "uniqueItems": True})
def _check_modes(value: Any) -> None:
    _distinct_choices(value, ChatAppMode.values)


# A plain string is taken as the text of these, enabled (CONTRACT §6).
TEXT_FEATURES = ("promptInputFieldLabel", "chatDisclaimerNotice")


@documented(FEATURES_SCHEMA)
def _check_features(value: Any) -> None:
    """The one feature-shape check (chat.features), in this API's error form."""
    try:
        validate_features(value)
    except InvalidFeatures as exc:
        raise serializers.ValidationError({exc.path: [exc.message]} if exc.path else [exc.message])


class ChatAppWriteSerializer(serializers.Serializer):
    """ChatAppForCreate | ChatAppForUpdate. Bind `instance` and `partial=True` for an update:
    only the given fields change. The one place the chat app rules live (API and Django admin)."""

    REFUSES_UNKNOWN_FIELDS = True  # but for the server-managed fields, ignored

    chatAppId = StrictCharField(source="chat_app_id", max_length=128, validators=[_check_chat_app_id])
    title = StrictCharField(max_length=200, validators=[check_not_blank])
    description = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    agentId = StrictCharField(source="agent_id", max_length=128, validators=[_check_agent_exists])
    enabled = StrictBooleanField(required=False, error_messages={"invalid": "must be a boolean"})
    userTypes = serializers.JSONField(source="user_types", required=False, validators=[_check_user_types])
    userRoles = serializers.JSONField(source="user_roles", required=False, validators=[_check_user_roles])
    applyRulesAs = serializers.ChoiceField(
        source="apply_rules_as", choices=ApplyRulesAs.values, required=False, error_messages={"invalid_choice": "must be and or or"}
    )
    modesSupported = serializers.JSONField(source="modes_supported", required=False, validators=[_check_modes])
    features = serializers.JSONField(required=False, validators=[_check_features])
    dontCacheThis = StrictBooleanField(source="dont_cache_this", required=False, error_messages={"invalid": "must be a boolean"})
    testType = serializers.ChoiceField(
        source="test_type", choices=TestType.choices, required=False, allow_null=True, error_messages={"invalid_choice": "must be mock"}
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields) - CHAT_APP_SERVER_MANAGED_FIELDS)
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a field of a chat app"]})
        return super().to_internal_value(data)


def validate_chat_app(data: Any, *, existing: ChatApp | None) -> dict[str, Any]:
    """The model fields a chat app write sets, after every rule; ValidationError (unwrapped) otherwise."""
    serializer = ChatAppWriteSerializer(instance=existing, data=data, partial=existing is not None)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ChatAppSerializer(serializers.ModelSerializer):
    """ChatApp as CONTRACT §5 lists its fields."""

    chatAppId = serializers.CharField(source="chat_app_id")
    agentId = serializers.CharField(source="agent_id")
    userTypes = serializers.JSONField(source="user_types")
    userRoles = serializers.JSONField(source="user_roles")
    applyRulesAs = serializers.CharField(source="apply_rules_as")
    modesSupported = serializers.JSONField(source="modes_supported")
    dontCacheThis = serializers.BooleanField(source="dont_cache_this")
    testType = serializers.CharField(source="test_type", allow_null=True)
    createDate = serializers.DateTimeField(source="create_date")
    lastUpdate = serializers.DateTimeField(source="last_update")

    class Meta:
        model = ChatApp
        fields = [
            "chatAppId",
            "title",
            "description",
            "agentId",
            "enabled",
            "userTypes",
            "userRoles",
            "applyRulesAs",
            "modesSupported",
            "features",
            "dontCacheThis",
            "testType",
            "createDate",
            "lastUpdate",
        ]
        read_only_fields = fields


class ChatAppUpsertRequestSerializer(serializers.Serializer):
    chatApp = serializers.JSONField(
        validators=[check_object], help_text="ChatAppForCreate, or ChatAppForUpdate: chatAppId and the fields to change."
    )
    userId = StrictCharField(required=False, allow_blank=True, help_text="Accepted like other writes; chat apps keep no stamps.")


class ChatAppSearchRequestSerializer(serializers.Serializer):
    chatAppIds = serializers.ListField(child=StrictCharField(), required=False, allow_null=True)
    userId = StrictCharField(required=False, allow_blank=True)


class ChatAppsForUserQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    chatAppId = StrictCharField(required=False, allow_blank=True)
    chatAppsForHomePage = serializers.BooleanField(required=False, default=False)
    customDataFieldPathToMatchUsersEntity = serializers.CharField(
        required=False, allow_blank=True, help_text="Accepted for compatibility; chat apps have no entity-based access control yet."
    )


# --- sessions, messages, feedback, converse (CONTRACT §5, SPEC.md "Send message") -------------


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
    """ChatSession as CONTRACT §5 lists its fields (token and cost totals included)."""

    sessionId = serializers.UUIDField()
    userId = serializers.CharField()
    chatAppId = serializers.CharField()
    agentId = serializers.CharField()
    title = serializers.CharField()
    status = serializers.ChoiceField(choices=SessionStatus.values)
    invocationMode = serializers.CharField(allow_null=True)
    source = serializers.CharField()
    entityId = serializers.CharField(allow_null=True)
    inputTokens = serializers.IntegerField()
    outputTokens = serializers.IntegerField()
    totalTokens = serializers.IntegerField()
    inputCost = serializers.FloatField()
    outputCost = serializers.FloatField()
    totalCost = serializers.FloatField()
    lastMessageId = serializers.UUIDField(allow_null=True)
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
            "createDate": _iso(session.create_date),
            "lastUpdate": _iso(session.last_update),
        }


class ChatMessageSerializer(serializers.Serializer):
    """ChatMessage (CONTRACT §5). `traces` only where the context asks for them (the Admin API)."""

    messageId = serializers.UUIDField()
    sessionId = serializers.UUIDField()
    userId = serializers.CharField()
    source = serializers.ChoiceField(choices=MessageSource.values)
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
        child=serializers.DictField(), required=False, help_text="Only on an answer that searched knowledge bases (CONTRACT §11)."
    )
    timestamp = serializers.DateTimeField()

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
        }
        if message.error:
            data["error"] = message.error
        if message.citations is not None:
            data["citations"] = message.citations
        if self.context.get("include_traces"):
            data["traces"] = message.traces
        return data


class ChatMessageFileSerializer(serializers.Serializer):
    """ChatMessageFile: a file attached to a message, as the upload answers it and the message lists it.

    A converse body's `files` lists these; only `fileId` is read from it (the stored file wins)."""

    fileId = serializers.UUIDField()
    fileName = serializers.CharField()
    mimeType = serializers.CharField()
    size = serializers.IntegerField(help_text="bytes")
    url = serializers.CharField(help_text="GET it (as the file's owner) for the file's bytes")


class FileUploadSerializer(serializers.Serializer):
    """`POST /api/chat/files` (multipart/form-data)."""

    file = serializers.FileField(allow_empty_file=False, use_url=False)
    chatAppId = StrictCharField(max_length=128, help_text="The chat app the file is for: its fileUpload feature decides.")


class SessionsQuerySerializer(serializers.Serializer):
    """GET /api/chat/sessions's parameters, for the schema (the view parses them by hand, by the same rules)."""

    userId = StrictCharField(required=False, allow_blank=True)
    chatAppId = StrictCharField(required=False, allow_blank=True)
    limit = serializers.IntegerField(required=False, default=20, min_value=1, max_value=100)


class MessagesQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    limit = serializers.IntegerField(required=False, default=50, min_value=1, max_value=1000)


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


class InternalCommentSerializer(serializers.Serializer):
    """An internal comment (CONTRACT §5). On writes `userId` and `createdOn` are the service's
    stamps (a comment naming an existing commentId keeps its own); `comment` is required."""

    REFUSES_UNKNOWN_FIELDS = True

    commentId = StrictCharField(required=False, max_length=128)
    userId = StrictCharField(required=False, allow_blank=True)
    comment = StrictCharField(max_length=10_000, trim_whitespace=False, validators=[check_not_blank])
    createdOn = StrictCharField(required=False, allow_blank=True)
    type = serializers.ChoiceField(choices=CommentType.values, required=False)
    status = serializers.ChoiceField(choices=CommentStatus.values, required=False)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a field of an internal comment"]})
        return super().to_internal_value(data)

    def to_representation(self, comment: FeedbackComment) -> dict[str, Any]:
        return {
            "commentId": comment.comment_id,
            "userId": comment.user_id,
            "comment": comment.comment,
            "createdOn": _iso(comment.created_on),
            "type": comment.type,
            "status": comment.status,
        }


class FeedbackSerializer(serializers.Serializer):
    """ChatSessionFeedback (CONTRACT §5). Read it with `internal_comments` prefetched."""

    feedbackId = serializers.CharField()
    sessionId = serializers.UUIDField()
    userId = serializers.CharField()
    messageId = serializers.CharField(allow_null=True)
    reportedByHuman = serializers.BooleanField()
    createdByCustomer = serializers.BooleanField()
    status = serializers.ChoiceField(choices=FeedbackStatus.values)
    severity = serializers.ChoiceField(choices=FeedbackSeverity.values, allow_null=True)
    type = serializers.ChoiceField(choices=FeedbackType.values)
    userComment = serializers.CharField()
    internalComments = InternalCommentSerializer(many=True)
    createdOn = serializers.DateTimeField()
    updatedOn = serializers.DateTimeField()

    def to_representation(self, feedback: ChatSessionFeedback) -> dict[str, Any]:
        comment = InternalCommentSerializer()
        return {
            "feedbackId": feedback.feedback_id,
            "sessionId": str(feedback.session_id),
            "userId": feedback.user_id,
            "messageId": feedback.message_id,
            "reportedByHuman": feedback.reported_by_human,
            "createdByCustomer": feedback.created_by_customer,
            "status": feedback.status,
            "severity": feedback.severity,
            "type": feedback.type,
            "userComment": feedback.user_comment,
            "internalComments": [comment.to_representation(item) for item in feedback.internal_comments.all()],
            "createdOn": _iso(feedback.created_on),
            "updatedOn": _iso(feedback.updated_on),
        }


_FEEDBACK_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
_TYPE_RULE = {"invalid_choice": "must be one of the 27 feedback types: " + ", ".join(FeedbackType.values)}


_check_feedback_id = RegexValidator(_FEEDBACK_ID, "must be 1 to 128 letters, digits or . _ : -")


class FeedbackCreateSerializer(serializers.Serializer):
    """ChatSessionFeedbackForCreate. A chat user sets the first five fields; an operator all of them."""

    feedbackId = StrictCharField(required=False, validators=[_check_feedback_id])
    sessionId = serializers.UUIDField(error_messages={"invalid": "must be a session id (UUID)"})
    messageId = serializers.UUIDField(required=False, allow_null=True, error_messages={"invalid": "must be a message id (UUID)"})
    type = serializers.ChoiceField(choices=FeedbackType.values, error_messages=_TYPE_RULE)
    userComment = StrictCharField(required=False, allow_blank=True, max_length=1000, trim_whitespace=False)
    severity = serializers.ChoiceField(choices=FeedbackSeverity.values, required=False, allow_null=True)
    status = serializers.ChoiceField(choices=FeedbackStatus.values, required=False)
    internalComments = InternalCommentSerializer(many=True, required=False)
    reportedByHuman = StrictBooleanField(required=False)
    createdByCustomer = StrictBooleanField(required=False)
    userId = StrictCharField(required=False, allow_blank=True, help_text="Ignored: feedback belongs to the session's user.")


class ChatFeedbackCreateSerializer(FeedbackCreateSerializer):
    """The schema of what a chat user may set: the view refuses the operator's fields."""

    status = internalComments = reportedByHuman = createdByCustomer = None


class FeedbackUpdateSerializer(serializers.Serializer):
    """ChatSessionFeedbackForUpdate: the feedback's id and what an update may change (CONTRACT §5):
    status, severity, type, userComment, internalComments (the whole list, in order). Other fields
    of the record may be sent back as read; they are left as they are."""

    feedbackId = StrictCharField()
    status = serializers.ChoiceField(choices=FeedbackStatus.values, required=False)
    severity = serializers.ChoiceField(choices=FeedbackSeverity.values, required=False, allow_null=True)
    type = serializers.ChoiceField(choices=FeedbackType.values, required=False, error_messages=_TYPE_RULE)
    userComment = StrictCharField(required=False, allow_blank=True, max_length=1000, trim_whitespace=False)
    internalComments = InternalCommentSerializer(many=True, required=False)


class FeedbackRequestSerializer(serializers.Serializer):
    feedback = serializers.JSONField(validators=[check_object])


class AdminFeedbackRequestSerializer(serializers.Serializer):
    command = serializers.ChoiceField(choices=["addChatSessionFeedback", "updateChatSessionFeedback"])
    feedback = serializers.JSONField(validators=[check_object])


# The schema of each command's body: the view validates `feedback` with the serializer named here.
FEEDBACK_COMMAND_SCHEMA = PolymorphicProxySerializer(
    component_name="AdminFeedbackRequest",
    serializers={
        "addChatSessionFeedback": inline_serializer(
            "AdminFeedbackAdd",
            {"command": serializers.ChoiceField(choices=["addChatSessionFeedback"]), "feedback": FeedbackCreateSerializer()},
        ),
        "updateChatSessionFeedback": inline_serializer(
            "AdminFeedbackUpdate",
            {"command": serializers.ChoiceField(choices=["updateChatSessionFeedback"]), "feedback": FeedbackUpdateSerializer()},
        ),
    },
    resource_type_field_name="command",
)


# --- insights (CONTRACT §5) -----------------------------------------------------------------------


class InsightsSerializer(serializers.Serializer):
    """The session insights record (CONTRACT §5), or null while the session has none."""

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


class _Strict(serializers.Serializer):
    """A request object whose unknown keys are refused (a misspelt filter must not match everything)."""

    unknown_rule = "is not a field here"

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({unknown[0]: [self.unknown_rule]})
        return super().to_internal_value(data)


class DateFilterSerializer(_Strict):
    """The reference's `{dateType: created|updated|feedback, startDate, endDate?}`, or this service's
    earlier `{from?, to?}` (creation dates); both become (dateType, start, end)."""

    dateType = serializers.ChoiceField(choices=["created", "updated", "feedback"], required=False, default="created")
    startDate = serializers.DateTimeField(required=False)
    endDate = serializers.DateTimeField(required=False)
    to = serializers.DateTimeField(required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        start, end = attrs.get("startDate", attrs.get("from")), attrs.get("endDate", attrs.get("to"))
        if start is not None and end is not None and end < start:
            raise serializers.ValidationError({"endDate": ["must not be before startDate"]})
        # endDate includes its instant (the reference's); the earlier `to` did not.
        return {"dateType": attrs["dateType"], "start": start, "end": end, "endInclusive": "to" not in attrs or "endDate" in attrs}


DateFilterSerializer._declared_fields["from"] = serializers.DateTimeField(required=False)


class ScoreFilterSerializer(_Strict):
    score = serializers.FloatField(min_value=0, max_value=10)
    operator = serializers.ChoiceField(choices=["eq", "gte", "lte"])


# Session search's insight filters (the reference's InsightsSearchParams): scores and facets.
INSIGHT_SCORE_FILTERS = {
    "goalAchievementScore": "goal_achievement",
    "userSatisfactionScore": "user_satisfaction",
    "aiPerformanceOverallScore": "ai_overall",
    "aiPerformanceAccuracyScore": "ai_accuracy",
    "aiPerformanceEfficiencyScore": "ai_efficiency",
    "interactionQualityScore": "interaction_quality",
}
INSIGHT_FACET_FILTERS = {
    "userSentiment": ("user_sentiment", ["positive", "neutral", "negative"]),
    "goalCompletionStatus": ("goal_completion_status", ["completed", "partially_completed", "not_completed"]),
    "satisfactionLevel": ("satisfaction_level", ["satisfied", "neutral", "dissatisfied"]),
    "sessionDurationEstimate": ("session_duration_estimate", ["short", "medium", "long"]),
    "complexityLevel": ("complexity_level", ["low", "medium", "high"]),
    "userEffortRequired": ("user_effort_required", ["low", "medium", "high"]),
    "aiConfidenceLevel": ("ai_confidence_level", ["low", "medium", "high"]),
}


def _choices(values: list[str]) -> serializers.ListField:
    return serializers.ListField(child=serializers.ChoiceField(choices=values), required=False)


class InsightsFilterSerializer(_Strict):
    hasInsights = serializers.BooleanField(error_messages={"required": "is required when insights filters are given"})


for _name in INSIGHT_SCORE_FILTERS:
    InsightsFilterSerializer._declared_fields[_name] = ScoreFilterSerializer(required=False)
for _name, (_column, _values) in INSIGHT_FACET_FILTERS.items():
    InsightsFilterSerializer._declared_fields[_name] = _choices(_values)

# sortBy fields → the session's sort key (the reference's SESSION_SEARCH_SORT_FIELDS).
SESSION_SORT_FIELDS = {
    "createDate": "create_date",
    "lastUpdate": "last_update",
    "sessionId": "session_id",
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "totalCost": "total_cost",
    "insightGoalAchievementScore": "insight__goal_achievement",
}


class SortFieldSerializer(_Strict):
    field = serializers.ChoiceField(choices=list(SESSION_SORT_FIELDS))
    order = serializers.ChoiceField(choices=["asc", "desc"], required=False, default="desc")


def _check_sort_by(value: Any) -> list[dict[str, str]]:
    if value in ("newest", "oldest"):  # this service's earlier form
        return [{"field": "createDate", "order": "desc" if value == "newest" else "asc"}]
    if not isinstance(value, list) or not value:
        raise serializers.ValidationError("must be a non-empty list of {field, order}, or newest or oldest")
    sort = SortFieldSerializer(data=value, many=True)
    if not sort.is_valid():
        raise serializers.ValidationError(sort.errors)
    fields = [item["field"] for item in sort.validated_data]
    if len(set(fields)) != len(fields):
        raise serializers.ValidationError("names a field more than once")
    return [dict(item) for item in sort.validated_data]


class SortByField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> list[dict[str, str]]:
        return _check_sort_by(data)


class SessionSearchFiltersSerializer(_Strict):
    """SessionSearchRequest (the reference's): every filter is ANDed; a list matches any of its
    values; the feedback filters must hold for one same feedback record (and the internal comment
    filters for one same comment of it)."""

    unknown_rule = "is not a filter of the session search"

    userId = StrictCharField(required=False, allow_blank=True)
    chatAppId = StrictCharField(required=False, allow_blank=True)
    sessionId = serializers.UUIDField(required=False, error_messages={"invalid": "must be a session id (UUID)"})
    customUserData = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    dateFilter = DateFilterSerializer(required=False)
    userType = _choices(UserType.values)
    invocationMode = _choices(InvocationMode.values)
    status = _choices(SessionStatus.values)
    flagged = serializers.BooleanField(required=False, allow_null=True, default=None)
    insights = InsightsFilterSerializer(required=False)
    feedbackInStatus = _choices(FeedbackStatus.values)
    feedbackReportedByHuman = serializers.BooleanField(required=False, allow_null=True, default=None)
    feedbackCreatedByCustomer = serializers.BooleanField(required=False, allow_null=True, default=None)
    feedbackSeverity = _choices(FeedbackSeverity.values)
    feedbackType = serializers.ListField(
        child=serializers.ChoiceField(choices=FeedbackType.values, error_messages=_TYPE_RULE), required=False
    )
    feedbackUserId = StrictCharField(required=False, allow_blank=True)
    feedbackInternalCommentType = _choices(CommentType.values)
    feedbackInternalCommentStatus = _choices(CommentStatus.values)
    feedbackInternalCommentUserId = StrictCharField(required=False, allow_blank=True)
    includeInsights = serializers.BooleanField(required=False, default=False)
    includeFeedback = serializers.BooleanField(required=False, default=False)
    sortBy = SortByField(required=False)
    size = serializers.JSONField(required=False)
    scrollId = serializers.CharField(required=False, allow_null=True, allow_blank=True)


class SessionSearchRequestSerializer(serializers.Serializer):
    command = serializers.ChoiceField(choices=["sessionSearch"])
    search = SessionSearchFiltersSerializer(required=False)
    size = serializers.JSONField(required=False, help_text="Page size, 1 to 100 (default 20).")
    scrollId = serializers.CharField(required=False, allow_null=True, allow_blank=True)


class ConverseRequestSerializer(serializers.Serializer):
    """SPEC.md "Send message": every field checked; `features` only narrows (CONTRACT §6)."""

    userId = StrictCharField(required=False, allow_blank=True)
    sessionId = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    chatAppId = StrictCharField(max_length=128)
    agentId = StrictCharField(max_length=128)
    message = StrictCharField(max_length=100_000, trim_whitespace=False, validators=[check_not_blank])
    features = serializers.JSONField(validators=[_check_features])
    files = serializers.ListField(child=serializers.DictField(), required=False, default=list, max_length=20)
    timezone = StrictCharField(required=False, allow_blank=True, max_length=64)
    invocationMode = serializers.ChoiceField(choices=InvocationMode.values, required=False, allow_null=True)
    source = serializers.ChoiceField(choices=TurnSource.values)


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


class WidgetDataWriteSerializer(serializers.Serializer):
    """`POST /api/chat/widget-data/<scope>/<tag>` (CONTRACT §13)."""

    userId = StrictCharField(required=False, allow_blank=True)
    data = serializers.JSONField(validators=[_check_prefs], help_text="a JSON object; at most 400 KB serialized (after a partial merge)")
    partial = StrictBooleanField(required=False, default=False, help_text="merge top-level keys into the stored object")
