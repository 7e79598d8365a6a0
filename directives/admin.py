"""Django admin for semantic directives: the Admin API's validation (`validate_directive`) in the
form's clean(), and saves through the same service, so the rules and stamps are the same."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest
from rest_framework import serializers

from chatplatform.admin_forms import ServiceAdmin
from chatplatform.api.exceptions import flatten_errors
from directives import services
from directives.models import DirectiveDeployment, SemanticDirective
from directives.scopes import FORMS_RULE
from directives.serializers import validate_directive

# Wire name → form field. The three ways to name a scope are all one field in the admin.
_FORM_FIELD = {"scope": "scope", "scopeType": "scope", "scopeValue": "scope", "id": "directive_id"}
_STAMPS = ("create_date", "last_update", "created_by", "last_updated_by")


class SemanticDirectiveForm(forms.ModelForm):
    """Runs the Admin API's validator in clean(); SemanticDirectiveAdmin saves through its service."""

    class Meta:
        model = SemanticDirective
        fields = ["scope", "directive_id", "description", "instructions"]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3}),
            "instructions": forms.Textarea(attrs={"rows": 14}),
        }
        help_texts = {
            "scope": f"The scope {FORMS_RULE.removeprefix('must be ')}.",
            "directive_id": "Unique within the scope; descriptive kebab-case, e.g. answer-in-french.",
            "description": "When the directive applies: the selection step reads it.",
            "instructions": "Injected into the prompt when the directive is selected.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        instructions = self.fields.get("instructions")
        if isinstance(instructions, forms.CharField):
            instructions.strip = False  # stored as sent, like the API

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # ModelForm.clean returns cleaned_data
        if self.errors:
            return cleaned  # missing fields and the like: fix those before the directive rules run
        adding = self.instance._state.adding
        # On change the scope and id are read-only: the directive keeps its identity.
        data = {
            "scope": cleaned.get("scope") if adding else self.instance.scope,
            "id": cleaned.get("directive_id") if adding else self.instance.directive_id,
            "description": cleaned.get("description"),
            "instructions": cleaned.get("instructions"),
        }
        try:
            validate_directive(data)
        except serializers.ValidationError as exc:
            assert isinstance(exc.detail, dict)  # a serializer's errors, keyed by field
            for name, detail in exc.detail.items():
                field = _FORM_FIELD.get(name.split(".")[0], name)
                self.add_error(field if field in self.fields else None, flatten_errors(detail, name))
        self.directive_data = data
        return cleaned


@admin.register(SemanticDirective)
class SemanticDirectiveAdmin(ServiceAdmin):
    form = SemanticDirectiveForm
    list_display = ("scope", "directive_id", "scope_type", "group_id", "last_update", "created_by")
    list_filter = ("scope_type", "group_id")
    search_fields = ("scope", "directive_id", "description")
    ordering = ("scope", "directive_id")

    # The stubs want a list of field groups (invariant); a list of names is one.
    def get_fields(self, request: HttpRequest, obj: SemanticDirective | None = None) -> list[str]:  # type: ignore[override]
        if obj is None:
            return ["scope", "directive_id", "description", "instructions"]
        return ["scope", "directive_id", "scope_type", "scope_value", "group_id", "description", "instructions", *_STAMPS]

    def get_readonly_fields(self, request: HttpRequest, obj: SemanticDirective | None = None) -> tuple[str, ...]:
        if obj is None:
            return ()
        # (scope, id) is the directive's identity: changing either would be another directive.
        return ("scope", "directive_id", "scope_type", "scope_value", "group_id", *_STAMPS)

    def service_save(self, form: SemanticDirectiveForm, *, user_id: str) -> SemanticDirective:
        return services.directive_upsert(data=form.directive_data, user_id=user_id)

    # Deletes go through the service too, which records them in the audit log.
    def service_delete(self, obj: SemanticDirective, *, user_id: str) -> None:
        services.directive_delete(data={"scope": obj.scope, "id": obj.directive_id}, user_id=user_id)


@admin.register(DirectiveDeployment)
class DirectiveDeploymentAdmin(admin.ModelAdmin):
    """The IaC batches applied, read-only: they are written by the deploy endpoint and command."""

    list_display = ("group_id", "stage", "timestamp", "user_id", "applied", "deleted", "deployed_at")
    list_filter = ("stage",)
    search_fields = ("group_id",)
    ordering = ("-deployed_at",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
