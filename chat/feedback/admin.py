"""The Django admin of feedback: the operators' workflow on reports, and a session's feedback inline."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest

from chat.feedback import services as feedback_services
from chat.feedback.models import ChatSessionFeedback, CommentStatus, CommentType, FeedbackComment
from chatplatform.api.permissions import caller_id


def exists_filter(title: str, parameter: str, choices: list[tuple[str, str]], records: Callable[[str], QuerySet[Any]]) -> type:
    """A list filter keeping the rows for which `records(value)` (an OuterRef("pk") subquery) exists."""

    class Filter(admin.SimpleListFilter):
        def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
            return choices

        def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
            value = self.value()
            return queryset.filter(Exists(records(value))) if value else queryset

    Filter.title, Filter.parameter_name = title, parameter
    return Filter


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
        exists_filter(
            "internal comment type",
            "comment_type",
            CommentType.choices,
            lambda value: FeedbackComment.objects.filter(feedback=OuterRef("pk"), type=value),
        ),
        exists_filter(
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

    # The stubs type `form` as a Form; the admin passes its ModelForm.
    def construct_change_message(self, request: HttpRequest, form: FeedbackAdminForm, formsets: Any, add: bool = False) -> Any:  # type: ignore[override]
        return super().construct_change_message(request, form, [], add)  # type: ignore[arg-type]  # the comments' formset is not saved by Django

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
                        "comment_id": instance.pk if not instance._state.adding else None,
                        "comment": data["comment"],
                        "type": data.get("type"),
                        "status": data.get("status"),
                    }
                )
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        saved = feedback_services.feedback_update(
            feedback_id=form.instance.pk, changes=changes, internal_comments=comments, acting_user_id=caller_id(request)
        )
        form.instance.updated_on = saved.updated_on
