"""The Django admin's sessions: the list with its search filters, and a session with its messages,
feedback and insights."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from chat.feedback.admin import SessionFeedbackInline, exists_filter
from chat.feedback.models import ChatSessionFeedback, FeedbackSeverity, FeedbackType
from chat.insights.admin import markdown_html
from chat.insights.models import SessionInsight
from chat.search.selectors import OPEN_FEEDBACK
from chat.sessions.models import ChatMessage, ChatSession

# --- Sessions, messages, feedback ----------------------------------------------------------------


class ChatMessageInline(admin.TabularInline):
    """A session's messages, read-only: what was said, by which model, at what cost, and where each
    sits on the session's branches (the message it follows: docs/api.md, "Branches")."""

    model = ChatMessage
    extra = 0
    can_delete = False
    ordering = ("timestamp",)
    fields = (
        "timestamp",
        "short_id",
        "follows",
        "source",
        "message",
        "failure",
        "model",
        "tokens",
        "cost",
        "execution_duration",
        "verifications",
        "citations",
        "traces",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="id")
    def short_id(self, message: ChatMessage) -> str:
        return str(message.message_id)[:8]

    @admin.display(description="follows")
    def follows(self, message: ChatMessage) -> str:
        """The parent's id as `id` shows it: two messages that follow the same one are versions of each other."""
        return str(message.parent_id)[:8] if message.parent_id else "– (start)"

    @admin.display(description="failed")
    def failure(self, message: ChatMessage) -> str:
        """An answer that failed midway: why (its text is what was streamed before; docs/faults.md)."""
        return f"{message.error.get('code')}: {message.error.get('message')}" if message.error else "–"

    @admin.display(description="tokens (in / out)")
    def tokens(self, message: ChatMessage) -> str:
        usage = message.usage or {}
        return f"{usage.get('inputTokens', 0)} / {usage.get('outputTokens', 0)}" if usage else "–"

    @admin.display(description="cost (USD)")
    def cost(self, message: ChatMessage) -> str:
        return f"{(message.usage or {}).get('totalCost', 0):.6f}" if message.usage else "–"


def _insight_filter(title: str, column: str, values: list[str]) -> type:
    class Filter(admin.SimpleListFilter):
        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return [(value, value.replace("_", " ")) for value in values]

        def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
            return queryset.filter(**{f"insight__{column}": self.value()}) if self.value() else queryset

    Filter.title, Filter.parameter_name = title, f"insight_{column}"
    return Filter


class FlaggedFilter(admin.SimpleListFilter):
    """Sessions with feedback still open or in review (the session search's `flagged`)."""

    title, parameter_name = "flagged", "flagged"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Flagged"), ("no", "Not flagged")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        flagged = Exists(ChatSessionFeedback.objects.filter(session=OuterRef("pk"), status__in=OPEN_FEEDBACK))
        return {"yes": queryset.filter(flagged), "no": queryset.filter(~flagged)}.get(self.value() or "", queryset)


class HasInsightsFilter(admin.SimpleListFilter):
    title, parameter_name = "insights", "has_insights"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Analysed"), ("no", "Not analysed")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        analysed = Q(insight__generated_at__isnull=False)
        return {"yes": queryset.filter(analysed), "no": queryset.exclude(analysed)}.get(self.value() or "", queryset)


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    """Sessions with their status, insights, feedback and messages."""

    list_display = ("session_id", "user", "chat_app_id", "agent_id", "title", "status", "goal_score", "total_tokens", "cost", "create_date")
    list_filter = (
        "status",
        FlaggedFilter,
        HasInsightsFilter,
        exists_filter(
            "feedback type",
            "feedback_type",
            FeedbackType.choices,
            lambda value: ChatSessionFeedback.objects.filter(session=OuterRef("pk"), type=value),
        ),
        exists_filter(
            "feedback severity",
            "feedback_severity",
            FeedbackSeverity.choices,
            lambda value: ChatSessionFeedback.objects.filter(session=OuterRef("pk"), severity=value),
        ),
        _insight_filter("user sentiment", "user_sentiment", ["positive", "neutral", "negative"]),
        _insight_filter("goal completion", "goal_completion_status", ["completed", "partially_completed", "not_completed"]),
        _insight_filter("satisfaction", "satisfaction_level", ["satisfied", "neutral", "dissatisfied"]),
        _insight_filter("AI confidence", "ai_confidence_level", ["low", "medium", "high"]),
        _insight_filter("complexity", "complexity_level", ["low", "medium", "high"]),
        "chat_app_id",
        "agent_id",
        ("create_date", admin.DateFieldListFilter),
    )
    list_select_related = ("user", "insight")
    search_fields = ("session_id", "user__user_id", "title")
    date_hierarchy = "create_date"
    ordering = ("-create_date",)
    inlines = [SessionFeedbackInline, ChatMessageInline]
    readonly_fields = [
        *(field.name for field in ChatSession._meta.concrete_fields if field.name not in ("turn_next", "turn_serving", "turn_started")),
        "insights",
    ]
    fields = readonly_fields  # type: ignore[assignment]  # a list of names is a list of field groups (the stubs' is invariant)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions start with a converse turn

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="cost (USD)", ordering="total_cost")
    def cost(self, session: ChatSession) -> str:
        return f"{session.total_cost:.6f}"

    @admin.display(description="goal score", ordering="insight__goal_achievement")
    def goal_score(self, session: ChatSession) -> str:
        insight = getattr(session, "insight", None)
        return f"{insight.goal_achievement:g}" if insight is not None and insight.goal_achievement is not None else "–"

    @admin.display(description="insights")
    def insights(self, session: ChatSession) -> str:
        """The analysis: scores, assessments, metrics and the Markdown report rendered."""
        insight = SessionInsight.objects.filter(pk=session.pk).first()
        if insight is None:
            return "Not analysed."
        state = format_html(
            "<p>Analysis: <strong>{}</strong> ({} attempt(s)){}</p>",
            insight.analysis_status,
            insight.attempts,
            format_html(" — {}", insight.error) if insight.error else "",
        )
        if insight.generated_at is None:
            return state
        scoring = insight.scoring or {}
        scores = scoring.get("scores", {})
        rows = [(name, scores[name]) for name in ("goalAchievement", "userSatisfaction", "interactionQuality")]
        rows += [(f"aiPerformance.{name}", item) for name, item in scores.get("aiPerformance", {}).items()]
        table = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", ((n, i["score"], i["description"]) for n, i in rows))
        facts = format_html_join(
            ", ", "{}: <strong>{}</strong>", ((k, v) for part in ("assessments", "metrics") for k, v in scoring.get(part, {}).items())
        )
        return format_html(
            "{}<p>By {} on {} (version {}).</p><table><tr><th>score</th><th>0-10</th><th>why</th></tr>{}</table>"
            '<p>{}</p><div class="insight-detail">{}</div>',
            state,
            insight.model,
            f"{insight.generated_at:%Y-%m-%d %H:%M}",
            insight.version,
            table,
            facts,
            mark_safe(markdown_html().render(insight.detail_markdown)),  # markdown-it escapes raw HTML (html=False)
        )
