"""Django admin for chat records."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest
from django_json_widget.widgets import JSONEditorWidget
from rest_framework import serializers

from chat import services as chat_services
from chat.models import ChatApp, ChatMessage, ChatSession, ChatSessionFeedback, ChatUser
from chat.serializers import ChatAppWriteSerializer, validate_chat_app
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
                form.base_fields[name].widget = JSONEditorWidget(height="160px")
                form.base_fields[name].required = False
        return form


# Wire name → model field, as the chat app write serializer maps them (the only place that does).
_CHAT_APP_MODEL_FIELD = {name: field.source for name, field in ChatAppWriteSerializer().fields.items()}


class ChatAppForm(forms.ModelForm):
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
        widgets = {name: JSONEditorWidget(height="160px") for name in ("user_types", "user_roles", "modes_supported")} | {
            "features": JSONEditorWidget(height="320px")
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
        app = chat_services.chat_app_upsert(data=form.chat_app_data)
        for field in ChatApp._meta.concrete_fields:
            setattr(obj, field.attname, getattr(app, field.attname))
        obj._state.adding = False


# --- Sessions, messages, feedback ----------------------------------------------------------------


class ChatMessageInline(admin.TabularInline):
    """A session's messages, read-only: what was said, by which model, at what cost."""

    model = ChatMessage
    extra = 0
    can_delete = False
    ordering = ("timestamp",)
    fields = ("timestamp", "source", "message", "model", "tokens", "cost", "execution_duration", "verifications", "traces")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="tokens (in / out)")
    def tokens(self, message: ChatMessage) -> str:
        usage = message.usage or {}
        return f"{usage.get('inputTokens', 0)} / {usage.get('outputTokens', 0)}" if usage else "–"

    @admin.display(description="cost (USD)")
    def cost(self, message: ChatMessage) -> str:
        return f"{(message.usage or {}).get('totalCost', 0):.6f}" if message.usage else "–"


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    """Sessions with their messages; usage and cost per session here, per message in the inline."""

    list_display = ("session_id", "user", "chat_app_id", "agent_id", "title", "status", "total_tokens", "cost", "create_date")
    list_filter = ("chat_app_id", "agent_id", "status", ("create_date", admin.DateFieldListFilter))
    search_fields = ("session_id", "user__user_id", "title")
    date_hierarchy = "create_date"
    ordering = ("-create_date",)
    inlines = [ChatMessageInline]
    readonly_fields = [
        field.name for field in ChatSession._meta.concrete_fields if field.name not in ("turn_next", "turn_serving", "turn_started")
    ]
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions start with a converse turn

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="cost (USD)", ordering="total_cost")
    def cost(self, session: ChatSession) -> str:
        return f"{session.total_cost:.6f}"


class FeedbackAdminForm(forms.ModelForm):
    class Meta:
        model = ChatSessionFeedback
        fields = ["status", "severity", "type"]


@admin.register(ChatSessionFeedback)
class ChatSessionFeedbackAdmin(admin.ModelAdmin):
    """Operators triage feedback: status, severity, type and internal comments (as the Admin API's update command)."""

    form = FeedbackAdminForm
    list_display = ("feedback_id", "session", "user_id", "type", "status", "severity", "created_by_customer", "created_on")
    list_filter = ("status", "severity", "type", "created_by_customer")
    search_fields = ("feedback_id", "session__session_id", "user_id", "user_comment")
    ordering = ("-created_on",)
    readonly_fields = (
        "feedback_id",
        "session",
        "user_id",
        "message_id",
        "reported_by_human",
        "created_by_customer",
        "user_comment",
        "created_on",
        "updated_on",
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # feedback is added through the API, where its session is checked

    def save_model(self, request: HttpRequest, obj: ChatSessionFeedback, form: FeedbackAdminForm, change: bool) -> None:
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        saved = chat_services.feedback_update(feedback_id=obj.pk, changes=changes)
        obj.updated_on = saved.updated_on
