"""Django admin for chat records."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserCreationForm
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from rest_framework import serializers

from chat import services as chat_services
from chat import webhooks
from chat.models import (
    ChatApp,
    ChatFile,
    ChatMessage,
    ChatSession,
    ChatSessionFeedback,
    ChatUser,
    CommentStatus,
    CommentType,
    FeedbackComment,
    FeedbackSeverity,
    FeedbackType,
    SessionInsight,
    WebhookAttempt,
    WebhookDelivery,
    WidgetData,
)
from chat.selectors import OPEN_FEEDBACK
from chat.serializers import ChatAppWriteSerializer, validate_chat_app
from chatplatform.admin_forms import AdminForm, JSONEditor, JSONField
from chatplatform.api.exceptions import flatten_errors


class ChatUserCreationForm(UserCreationForm):
    class Meta:
        model = ChatUser
        fields = ("user_id",)


@admin.register(ChatUser)
class ChatUserAdmin(UserAdmin):
    add_form = ChatUserCreationForm
    list_display = ("user_id", "email", "first_name", "last_name", "user_type", "is_staff", "last_update")
    list_filter = ("user_type", "is_staff", "is_active")
    search_fields = ("user_id", "email")
    ordering = ("user_id",)
    readonly_fields = ("create_date", "last_update", "last_login")
    fieldsets = (
        (None, {"fields": ("user_id", "password")}),
        ("Profile", {"fields": ("email", "first_name", "last_name", "user_type", "custom_data", "roles", "prefs")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("create_date", "last_update", "last_login")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("user_id", "password1", "password2")}),)

    def get_form(self, request, obj=None, **kwargs):  # type: ignore[no-untyped-def]
        form = super().get_form(request, obj, **kwargs)
        for name in ("custom_data", "roles", "prefs"):
            if name in form.base_fields:
                form.base_fields[name] = JSONField(required=False, widget=JSONEditor(height="160px"))
        return form


# Wire name → model field, as the chat app write serializer maps them (the only place that does).
_CHAT_APP_MODEL_FIELD = {name: field.source for name, field in ChatAppWriteSerializer().fields.items()}


class ChatAppForm(AdminForm):
    """Runs the Admin API's chat app validator in clean(); ChatAppAdmin saves through its service."""

    class Meta:
        model = ChatApp
        fields = [
            "chat_app_id",
            "title",
            "description",
            "agent",
            "enabled",
            "user_types",
            "user_roles",
            "apply_rules_as",
            "modes_supported",
            "features",
            "dont_cache_this",
            "test_type",
        ]
        field_classes = dict.fromkeys(("user_types", "user_roles", "modes_supported", "features"), JSONField)
        widgets = {name: JSONEditor(height="160px") for name in ("user_types", "user_roles", "modes_supported")} | {
            "features": JSONEditor(height="320px")
        }
        help_texts = {
            "user_types": 'e.g. ["internal-user"]; empty: every user type.',
            "user_roles": 'e.g. ["beta"]; empty: every role.',
            "modes_supported": 'e.g. ["standalone", "embedded"].',
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        adding = self.instance._state.adding
        data: dict[str, Any] = {}
        for name, source in _CHAT_APP_MODEL_FIELD.items():
            form_field = "agent" if source == "agent_id" else source
            if form_field in cleaned:
                value = cleaned[form_field]
                data[name] = value.pk if form_field == "agent" and value is not None else value
        data["chatAppId"] = cleaned.get("chat_app_id") if adding else self.instance.pk
        for name, empty in (("userTypes", []), ("userRoles", []), ("modesSupported", []), ("features", {})):
            if data.get(name) is None:
                data[name] = empty  # an empty editor means none
        existing = None if adding else ChatApp.objects.get(pk=self.instance.pk)
        try:
            validate_chat_app(data, existing=existing)
        except serializers.ValidationError as exc:
            for name, detail in exc.detail.items():
                source = _CHAT_APP_MODEL_FIELD.get(name)
                field = "agent" if source == "agent_id" else source
                self.add_error(field if field in self.fields else None, flatten_errors(detail, name))
        self.chat_app_data = data
        return cleaned


@admin.register(ChatApp)
class ChatAppAdmin(admin.ModelAdmin):
    form = ChatAppForm
    list_display = ("chat_app_id", "title", "agent", "enabled", "test_type", "last_update")
    list_filter = ("enabled", "test_type")
    search_fields = ("chat_app_id", "title", "description", "agent__agent_id")
    list_select_related = ("agent",)
    autocomplete_fields = ("agent",)
    ordering = ("chat_app_id",)
    readonly_fields = ("create_date", "last_update")

    def get_readonly_fields(self, request: HttpRequest, obj: ChatApp | None = None) -> tuple[str, ...]:
        return (*self.readonly_fields, "chat_app_id") if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: ChatApp, form: ChatAppForm, change: bool) -> None:
        app = chat_services.chat_app_upsert(data=form.chat_app_data, user_id=request.user.pk)
        for field in ChatApp._meta.concrete_fields:
            setattr(obj, field.attname, getattr(app, field.attname))
        obj._state.adding = False

    # Deletes go through the service too, which records them in the audit log.
    def delete_model(self, request: HttpRequest, obj: ChatApp) -> None:
        chat_services.chat_app_delete(chat_app_id=obj.chat_app_id, user_id=request.user.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ChatApp]) -> None:
        for chat_app_id in queryset.values_list("chat_app_id", flat=True):
            chat_services.chat_app_delete(chat_app_id=chat_app_id, user_id=request.user.pk)


# --- Sessions, messages, feedback ----------------------------------------------------------------


class ChatMessageInline(admin.TabularInline):
    """A session's messages, read-only: what was said, by which model, at what cost."""

    model = ChatMessage
    extra = 0
    can_delete = False
    ordering = ("timestamp",)
    fields = (
        "timestamp",
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


def _exists_filter(title: str, parameter: str, choices: list[tuple[str, str]], records: Callable[[str], QuerySet[Any]]) -> type:
    """A list filter keeping the rows for which `records(value)` (an OuterRef("pk") subquery) exists."""

    class Filter(admin.SimpleListFilter):
        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return choices

        def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
            value = self.value()
            return queryset.filter(Exists(records(value))) if value else queryset

    Filter.title, Filter.parameter_name = title, parameter
    return Filter


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


class SessionFeedbackInline(admin.TabularInline):
    """A session's feedback; each opens its own page to triage."""

    model = ChatSessionFeedback
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("type", "severity", "status", "reported_by_human", "user_id", "user_comment", "created_on")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@functools.cache
def _markdown() -> Any:
    """The insight reports' renderer, built at the first report shown (not when Django starts).
    Raw HTML in a model's report is escaped, not rendered; an image is shown as a link, never
    loaded (a report's image on another host would tell it who reads the report)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).disable("image")


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    """Sessions with their status, insights, feedback and messages."""

    list_display = ("session_id", "user", "chat_app_id", "agent_id", "title", "status", "goal_score", "total_tokens", "cost", "create_date")
    list_filter = (
        "status",
        FlaggedFilter,
        HasInsightsFilter,
        _exists_filter(
            "feedback type",
            "feedback_type",
            FeedbackType.choices,
            lambda value: ChatSessionFeedback.objects.filter(session=OuterRef("pk"), type=value),
        ),
        _exists_filter(
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
    fields = readonly_fields

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
            mark_safe(_markdown().render(insight.detail_markdown)),  # markdown-it escapes raw HTML (html=False)
        )


class FeedbackAdminForm(forms.ModelForm):
    class Meta:
        model = ChatSessionFeedback
        fields = ["status", "severity", "type", "user_comment"]


class FeedbackCommentInline(admin.TabularInline):
    """Internal comments, edited in place; authors and dates are stamped by the feedback service."""

    model = FeedbackComment
    extra = 1
    fields = ("comment", "type", "status", "user_id", "created_on")
    readonly_fields = ("user_id", "created_on")
    ordering = ("position",)


@admin.register(ChatSessionFeedback)
class ChatSessionFeedbackAdmin(admin.ModelAdmin):
    """Operators triage feedback: status, severity, type, user comment and internal comments (as the Admin API's update command)."""

    form = FeedbackAdminForm
    inlines = [FeedbackCommentInline]
    list_display = (
        "feedback_id",
        "session",
        "user_id",
        "type",
        "status",
        "severity",
        "reported_by_human",
        "created_by_customer",
        "created_on",
    )
    list_filter = (
        "status",
        "severity",
        "type",
        "reported_by_human",
        "created_by_customer",
        _exists_filter(
            "internal comment type",
            "comment_type",
            CommentType.choices,
            lambda value: FeedbackComment.objects.filter(feedback=OuterRef("pk"), type=value),
        ),
        _exists_filter(
            "internal comment status",
            "comment_status",
            CommentStatus.choices,
            lambda value: FeedbackComment.objects.filter(feedback=OuterRef("pk"), status=value),
        ),
    )
    search_fields = ("feedback_id", "session__session_id", "user_id", "user_comment")
    ordering = ("-created_on",)
    readonly_fields = (
        "feedback_id",
        "session",
        "user_id",
        "message_id",
        "reported_by_human",
        "created_by_customer",
        "created_on",
        "updated_on",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # feedback is added through the API, where its session is checked

    def save_model(self, request: HttpRequest, obj: ChatSessionFeedback, form: FeedbackAdminForm, change: bool) -> None:
        pass  # saved with its comments in save_related, through the service

    def construct_change_message(self, request: HttpRequest, form: FeedbackAdminForm, formsets: Any, add: bool = False) -> Any:
        return super().construct_change_message(request, form, [], add)  # the comments' formset is not saved by Django

    def save_related(self, request: HttpRequest, form: FeedbackAdminForm, formsets: list[Any], change: bool) -> None:
        comments = []
        for formset in formsets:
            for comment_form in formset.forms:
                data = getattr(comment_form, "cleaned_data", None)
                if not data or data.get("DELETE") or not (data.get("comment") or "").strip():
                    continue
                instance = comment_form.instance
                comments.append(
                    {
                        "commentId": instance.pk if not instance._state.adding else None,
                        "comment": data["comment"],
                        "type": data.get("type"),
                        "status": data.get("status"),
                    }
                )
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        saved = chat_services.feedback_update(
            feedback_id=form.instance.pk, changes=changes, internal_comments=comments, acting_user_id=request.user.pk
        )
        form.instance.updated_on = saved.updated_on


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "duration_ms", "status_code", "error", "response_excerpt", "worker")
    readonly_fields = fields
    ordering = ("number",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EndpointFilter(admin.SimpleListFilter):
    """The endpoints of CHAT_WEBHOOKS (URLs with a password masked; secrets are never shown)."""

    title, parameter_name = "endpoint", "endpoint"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(str(index), webhooks.shown_url(entry["url"])) for index, entry in enumerate(settings.CHAT_WEBHOOKS)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() is None or not self.value().isdigit() or int(self.value()) >= len(settings.CHAT_WEBHOOKS):
            return queryset
        return queryset.filter(endpoint=settings.CHAT_WEBHOOKS[int(self.value())]["url"])


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """Webhook deliveries and their attempts (CONTRACT §9); "send again" queues a new attempt now."""

    list_display = (
        "delivery_id",
        "event",
        "endpoint_shown",
        "state",
        "attempts",
        "last_status",
        "created_at",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("event", EndpointFilter, "state", ("created_at", admin.DateFieldListFilter))
    search_fields = ("=delivery_id", "=session_id")
    ordering = ("-created_at",)
    inlines = [AttemptInline]
    actions = ["send_again"]
    fields = (
        "delivery_id",
        "event",
        "endpoint_shown",
        "session_id",
        "body",
        "state",
        "attempts",
        "created_at",
        "retry_from",
        "next_attempt_at",
        "delivered_at",
        "last_status",
        "last_error",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # events come from their causes

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None  # the list (and its action) only

    @admin.display(description="endpoint")
    def endpoint_shown(self, delivery: WebhookDelivery) -> str:
        return webhooks.shown_url(delivery.endpoint)

    @admin.action(description="Send again")
    def send_again(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        count = webhooks.send_again(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{count} deliver{'y' if count == 1 else 'ies'} queued to be sent again.")


@admin.register(ChatFile)
class ChatFileAdmin(admin.ModelAdmin):
    """Files people attached to messages: listed and deletable (with their bytes), never edited or
    opened here (only their owner reads them, through the Chat API)."""

    list_display = ("name", "user", "chat_app_id", "mime_type", "size", "create_date")
    list_filter = ("mime_type",)
    search_fields = ("name", "user__user_id", "chat_app_id")
    readonly_fields = ("file_id", "user", "chat_app_id", "name", "mime_type", "size", "storage_name", "create_date")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WidgetData)
class WidgetDataAdmin(admin.ModelAdmin):
    """Widgets' objects per user and tag (issue 22): listed, read and deletable (a reset for one
    person), never edited here: widgets write them through the Chat API, which checks the size."""

    list_display = ("user", "scope", "tag", "size", "last_update")
    list_filter = ("scope",)
    search_fields = ("user__user_id", "scope", "tag")
    readonly_fields = ("user", "scope", "tag", "data", "size", "create_date", "last_update")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
