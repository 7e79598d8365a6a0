"""Session search's request (docs/api.md, "Session search"): filters, sorts and pages, each
refused by name when malformed; and its answer's sessions."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.serializers import StrictCharField
from chat.feedback.models import (
    CommentStatus,
    CommentType,
    FeedbackSeverity,
    FeedbackStatus,
    FeedbackType,
)
from chat.feedback.serializers import TYPE_RULE, FeedbackSerializer
from chat.insights.serializers import InsightsSerializer
from chat.sessions.models import ChatSession, InvocationMode, SessionStatus
from chat.sessions.serializers import ChatSessionSerializer
from chat.users.models import UserType


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
        child=serializers.ChoiceField(choices=FeedbackType.values, error_messages=TYPE_RULE), required=False
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


class SessionSearchHitSerializer(ChatSessionSerializer):
    """A session found, with its insights and feedback when the search asks for them (context:
    `include_insights`, `include_feedback`, and `extras` from chat.search.selectors.sessions_extras)."""

    OMIT_UNLESS_CONTEXT = {"insights": "include_insights", "feedback": "include_feedback"}

    insights = serializers.SerializerMethodField()
    feedback = serializers.SerializerMethodField()

    @extend_schema_field(InsightsSerializer(allow_null=True))
    def get_insights(self, session: ChatSession) -> dict[str, Any] | None:
        record = self.context["extras"][session.pk]["insights"]
        return InsightsSerializer(record).data if record is not None else None

    @extend_schema_field(FeedbackSerializer(many=True))
    def get_feedback(self, session: ChatSession) -> list[dict[str, Any]]:
        return list(FeedbackSerializer(self.context["extras"][session.pk]["feedback"], many=True).data)
