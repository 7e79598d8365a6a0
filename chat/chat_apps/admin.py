"""The Django admin of chat apps: it saves and deletes through the services, so its rules are the API's."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from rest_framework import serializers

from chat.chat_apps import services as chat_app_services
from chat.chat_apps.models import ChatApp
from chat.chat_apps.serializers import ChatAppWriteSerializer, validate_chat_app
from chatplatform.admin_forms import AdminForm, JSONEditor, JSONField
from chatplatform.api.exceptions import flatten_errors
from chatplatform.api.permissions import caller_id

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
            "retention_days",
        ]
        field_classes = dict.fromkeys(("user_types", "user_roles", "modes_supported", "features"), JSONField)
        widgets = {name: JSONEditor(height="160px") for name in ("user_types", "user_roles", "modes_supported")} | {
            "features": JSONEditor(height="320px")
        }
        help_texts = {
            "user_types": 'e.g. ["internal-user"]; empty: every user type.',
            "user_roles": 'e.g. ["beta"]; empty: every role.',
            "modes_supported": 'e.g. ["standalone", "embedded"].',
            "retention_days": "Days a session is kept after its last message; empty: the site's CHAT_RETENTION_DAYS (docs/data.md).",
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # ModelForm.clean returns cleaned_data
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
            assert isinstance(exc.detail, dict)  # a serializer's errors, keyed by field
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
        app = chat_app_services.chat_app_upsert(data=form.chat_app_data, user_id=caller_id(request))
        for field in ChatApp._meta.concrete_fields:
            setattr(obj, field.attname, getattr(app, field.attname))
        obj._state.adding = False

    # Deletes go through the service too, which records them in the audit log.
    def delete_model(self, request: HttpRequest, obj: ChatApp) -> None:
        chat_app_services.chat_app_delete(chat_app_id=obj.chat_app_id, user_id=caller_id(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ChatApp]) -> None:
        for chat_app_id in queryset.values_list("chat_app_id", flat=True):
            chat_app_services.chat_app_delete(chat_app_id=chat_app_id, user_id=caller_id(request))
