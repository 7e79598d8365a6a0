"""Django admin of tool definitions: the same rules and the same writes as the Admin API.

The form's clean() runs tools.services.tool_check (tools.validation.clean_tool, like the API) and
the save goes through tools.services.tool_upsert. The OAuth client secret is never rendered: it is
edited in a password input that starts empty, and leaving it empty keeps the stored secret.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib import admin
from django.core.validators import MaxLengthValidator
from django.http import HttpRequest

from chatplatform.admin_forms import AdminForm, CodeEditor, JSONEditor, JSONField, ServiceAdmin
from tools import services
from tools.models import ExecutionType, ToolDefinition
from tools.schema import SUPPORTED_AGENT_FRAMEWORKS, VARIANT_FIELDS
from tools.serializers import definition_from_model_values, field_sources
from tools.validation import REDACTED, ToolInvalid

_JSON_FIELDS = ("supported_agent_frameworks", "function_schema", "tags", "access_rules", "approval")
_AUTH_FORM_FIELDS = {"clientId": "auth_client_id", "clientSecret": "auth_client_secret", "tokenUrl": "auth_token_url"}
# Wire paths of the validator's issues that are not one-to-one model fields → form fields.
_EXTRA_FORM_FIELDS = {
    "lifecycle": "lifecycle_status",
    "lifecycle.status": "lifecycle_status",
    "lifecycle.deprecationDate": "deprecation_date",
    "lifecycle.migrationPath": "migration_path",
    "auth": "auth_client_id",
    **{f"auth.{wire}": form_field for wire, form_field in _AUTH_FORM_FIELDS.items()},
}


class ToolDefinitionForm(AdminForm):
    auth_client_id = forms.CharField(label="OAuth client id", required=False)
    auth_client_secret = forms.CharField(
        label="OAuth client secret",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Never shown. Leave empty to keep the stored secret.",
    )
    auth_token_url = forms.CharField(label="OAuth token URL", required=False)

    class Meta:
        model = ToolDefinition
        # `auth` is edited through the three auth_* fields so that the secret is never rendered.
        fields = (
            "tool_id",
            "execution_type",
            "name",
            "display_name",
            "description",
            "supported_agent_frameworks",
            "function_schema",
            "execution_timeout",
            "function_arn",
            "url",
            "code",
            "lifecycle_status",
            "deprecation_date",
            "migration_path",
            "access_rules",
            "approval",
            "tags",
            "test_type",
        )
        field_classes = dict.fromkeys(_JSON_FIELDS, JSONField)
        widgets = {
            **{name: JSONEditor(height="220px") for name in _JSON_FIELDS},
            "description": forms.Textarea(attrs={"rows": 3}),
            "code": CodeEditor(),
        }
        help_texts = {"code": "One JavaScript function expression, called as fn(event, params); it may be async."}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            # Lengths, blanks and formats are the validator's to judge, with the API's wording.
            if isinstance(field, forms.CharField) and field.max_length:
                field.max_length = None
                field.validators = [v for v in field.validators if not isinstance(v, MaxLengthValidator)]
                field.widget.attrs.pop("maxlength", None)
        for name in (*_JSON_FIELDS, "execution_timeout"):
            if name in self.fields:
                self.fields[name].required = False
        auth = self.instance.auth or {}
        self.fields["auth_client_id"].initial = auth.get("clientId", "")
        self.fields["auth_token_url"].initial = auth.get("tokenUrl", "")
        if auth.get("clientSecret"):
            self.fields["auth_client_secret"].widget.attrs["placeholder"] = f"{REDACTED} (stored)"
        if self.instance._state.adding and "supported_agent_frameworks" in self.fields:
            self.fields["supported_agent_frameworks"].initial = list(SUPPORTED_AGENT_FRAMEWORKS)

    def _definition(self) -> dict[str, Any]:
        values = {name: value for name, value in self.cleaned_data.items() if name not in _AUTH_FORM_FIELDS.values()}
        auth = {wire: self.cleaned_data.get(form_field) or None for wire, form_field in _AUTH_FORM_FIELDS.items()}
        # All empty means no OAuth; an empty secret means "keep the stored one" (tools.services).
        values["auth"] = None if not any(auth.values()) else auth
        definition = definition_from_model_values(values)
        if not self.instance._state.adding:
            definition["toolId"] = self.instance.tool_id
        execution_type = definition.get("executionType")
        for other_type, fields in VARIANT_FIELDS.items():
            for field in fields:
                # The form always holds every variant's inputs: empty ones of other variants are absent,
                # filled ones are sent so that the validator refuses them as the API does.
                if other_type != execution_type and definition.get(field) in (None, ""):
                    definition.pop(field, None)
        return definition

    def _form_field(self, wire_path: str) -> str | None:
        if wire_path in _EXTRA_FORM_FIELDS:
            return _EXTRA_FORM_FIELDS[wire_path]
        head = re.split(r"[.\[]", wire_path, maxsplit=1)[0]
        form_field = field_sources().get(head)
        return form_field if form_field in self.fields else None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # ModelForm.clean returns cleaned_data
        if self.errors:  # unparsable input (JSON, numbers, dates): fix that first
            return cleaned
        self.definition = self._definition()
        try:
            services.tool_check(tool=self.definition)
        except ToolInvalid as exc:
            for issue in exc.issues:
                form_field = self._form_field(issue.field)
                exact = form_field is not None and (issue.field in _EXTRA_FORM_FIELDS or field_sources().get(issue.field) == form_field)
                message = issue.message if exact else f"{issue.field or 'tool'}: {issue.message}"
                self.add_error(form_field, message)
        return cleaned


@admin.register(ToolDefinition)
class ToolDefinitionAdmin(ServiceAdmin):
    form = ToolDefinitionForm
    list_display = ("tool_id", "name", "execution_type", "lifecycle_status", "version", "test_type", "updated_at")
    list_filter = ("execution_type", "lifecycle_status", "test_type")
    search_fields = ("tool_id", "name", "description")
    ordering = ("tool_id",)
    fieldsets = (
        (None, {"fields": ("tool_id", "version", "execution_type", "name", "display_name", "description", "supported_agent_frameworks")}),
        ("Functions offered to the model", {"fields": ("function_schema", "execution_timeout")}),
        (f"{ExecutionType.FUNCTION.label} (executionType function)", {"fields": ("function_arn",)}),
        (f"{ExecutionType.MCP.label} (executionType mcp)", {"fields": ("url", "auth_client_id", "auth_client_secret", "auth_token_url")}),
        (f"{ExecutionType.INLINE.label} (executionType inline)", {"fields": ("code",)}),
        ("Lifecycle", {"fields": ("lifecycle_status", "deprecation_date", "migration_path")}),
        ("Access, approval, tags, tests", {"fields": ("access_rules", "approval", "tags", "test_type")}),
        ("Audit", {"fields": ("created_by", "created_at", "last_modified_by", "updated_at")}),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: ToolDefinition | None = None) -> tuple[str, ...]:
        audit = ("version", "created_by", "created_at", "last_modified_by", "updated_at")
        # toolId is the primary key: a new version is a new tool, never a rename.
        return ("tool_id", *audit) if obj is not None else audit

    def service_save(self, form: ToolDefinitionForm, *, user_id: str) -> ToolDefinition:
        return services.tool_upsert(tool=form.definition, user_id=user_id)

    def service_delete(self, obj: ToolDefinition, *, user_id: str) -> None:
        services.tool_delete(tool_id=obj.tool_id, user_id=user_id)
