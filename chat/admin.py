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
from chat.models import ChatApp, ChatUser
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
