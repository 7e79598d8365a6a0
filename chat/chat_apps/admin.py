"""The Django admin of chat apps: it saves and deletes through the services, so its rules are the API's."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from rest_framework import serializers

from chat.chat_apps import services as chat_app_services
from chat.chat_apps.models import ChatApp
from chat.chat_apps.serializers import ChatAppWriteSerializer, validate_chat_app
from chatplatform.admin_forms import AdminForm, JSONEditor, JSONField, ServiceAdmin
from chatplatform.api.exceptions import flatten_errors

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
class ChatAppAdmin(ServiceAdmin):
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

    def service_save(self, form: ChatAppForm, *, user_id: str) -> ChatApp:
        return chat_app_services.chat_app_upsert(data=form.chat_app_data, user_id=user_id)

    # Deletes go through the service too, which records them in the audit log.
    def service_delete(self, obj: ChatApp, *, user_id: str) -> None:
        chat_app_services.chat_app_delete(chat_app_id=obj.chat_app_id, user_id=user_id)
