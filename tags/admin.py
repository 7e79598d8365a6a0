"""Django admin of tag definitions: the same validator and the same services as the Admin API."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from chatplatform.admin_forms import AdminForm, JSONEditor, JSONField, ServiceAdmin
from chatplatform.api.exceptions import flatten_errors
from chatplatform.api.permissions import caller_id
from tags import services
from tags.models import TagDefinition, TagStatus, WidgetType
from tags.serializers import TagDefinitionSerializer, wire_from_model_fields, writable_fields


class TagDefinitionAdminForm(AdminForm):
    """Runs `TagDefinitionSerializer` (the API's validator) in `clean()`; its errors are shown on
    the field they name, and the admin saves the validated definition through `tags.services`."""

    validated_definition: dict[str, Any] | None = None

    class Meta:
        model = TagDefinition
        fields = (
            "scope",
            "tag",
            "description",
            "status",
            "usage_mode",
            "widget",
            "rendering_contexts",
            "can_be_generated_by_llm",
            "can_be_generated_by_tool",
            "llm_instructions_md",
            "llm_instructions",
            "dont_cache_this",
        )
        field_classes = dict.fromkeys(("widget", "rendering_contexts", "llm_instructions"), JSONField)
        widgets = {
            "widget": JSONEditor(height="220px"),
            "rendering_contexts": JSONEditor(height="220px"),
            "llm_instructions": JSONEditor(height="220px"),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # ModelForm.clean returns cleaned_data
        values: dict[str, Any] = {"scope": self.instance.scope, "tag": self.instance.tag} if self.instance.pk else {}
        values.update(cleaned)
        serializer = TagDefinitionSerializer(data=wire_from_model_fields(values))
        if serializer.is_valid():
            self.validated_definition = dict(serializer.validated_data)
            # The canonical forms (rendering contexts as objects...) are what gets saved.
            cleaned.update({name: value for name, value in self.validated_definition.items() if name in self.fields})
            return cleaned
        model_names = writable_fields()
        for wire_name, detail in serializer.errors.items():
            field = model_names.get(wire_name)
            target = field if field in self.fields else None
            if target is not None and target in self.errors:
                continue  # the form field already reports this field's problem
            for line in flatten_errors(detail, wire_name):
                self.add_error(target, line)
        return cleaned


class WidgetTypeFilter(admin.SimpleListFilter):
    title = "widget type"
    parameter_name = "widget_type"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(WidgetType.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[TagDefinition]) -> QuerySet[TagDefinition]:
        return queryset.filter(widget__type=self.value()) if self.value() else queryset


@admin.register(TagDefinition)
class TagDefinitionAdmin(ServiceAdmin):
    form = TagDefinitionAdminForm
    list_display = ("scope", "tag", "status", "usage_mode", "widget_type", "can_be_generated_by_llm", "last_update")
    list_filter = ("status", "usage_mode", WidgetTypeFilter)
    search_fields = ("scope", "tag", "description")
    ordering = ("scope", "tag")
    actions = ("enable_selected", "disable_selected", "retire_selected", "clear_tag_cache")
    readonly_fields = ("group_id", "created_by", "last_updated_by", "create_date", "last_update")
    fieldsets = (
        (None, {"fields": ("scope", "tag", "description", "status", "usage_mode")}),
        ("Widget", {"fields": ("widget", "rendering_contexts")}),
        ("Model", {"fields": ("can_be_generated_by_llm", "can_be_generated_by_tool", "llm_instructions_md", "llm_instructions")}),
        ("Caching and deployment", {"fields": ("dont_cache_this", "group_id")}),
        ("Audit", {"fields": ("created_by", "last_updated_by", "create_date", "last_update")}),
    )

    @admin.display(description="widget type")
    def widget_type(self, obj: TagDefinition) -> str:
        return obj.widget_type

    def get_readonly_fields(self, request: HttpRequest, obj: TagDefinition | None = None) -> tuple[str, ...]:
        # (scope, tag) is the identity: renaming would be a different definition.
        return (*self.readonly_fields, "scope", "tag") if obj is not None else tuple(self.readonly_fields)

    def service_save(self, form: TagDefinitionAdminForm, *, user_id: str) -> TagDefinition:
        return services.tag_upsert(definition=form.validated_definition or {}, user_id=user_id)

    def service_delete(self, obj: TagDefinition, *, user_id: str) -> None:
        services.tags_delete(ids=[obj.pk], user_id=user_id)

    def service_delete_many(self, queryset: QuerySet[TagDefinition], *, user_id: str) -> None:
        services.tags_delete(ids=list(queryset.values_list("pk", flat=True)), user_id=user_id)

    def _move(self, request: HttpRequest, queryset: QuerySet[TagDefinition], status: TagStatus) -> None:
        changed = services.tags_set_status(ids=list(queryset.values_list("pk", flat=True)), status=status, user_id=caller_id(request))
        self.message_user(request, f"{changed} tag definition(s) now {status.value}.", messages.SUCCESS)

    @admin.action(description="Enable selected tag definitions")
    def enable_selected(self, request: HttpRequest, queryset: QuerySet[TagDefinition]) -> None:
        self._move(request, queryset, TagStatus.ENABLED)

    @admin.action(description="Disable selected tag definitions")
    def disable_selected(self, request: HttpRequest, queryset: QuerySet[TagDefinition]) -> None:
        self._move(request, queryset, TagStatus.DISABLED)

    @admin.action(description="Retire selected tag definitions")
    def retire_selected(self, request: HttpRequest, queryset: QuerySet[TagDefinition]) -> None:
        self._move(request, queryset, TagStatus.RETIRED)

    @admin.action(description="Clear the tag cache (the selection is ignored)")
    def clear_tag_cache(self, request: HttpRequest, queryset: QuerySet[TagDefinition]) -> None:
        services.tag_cache_clear()
        self.message_user(request, "The tag cache was cleared.", messages.SUCCESS)
