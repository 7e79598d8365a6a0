"""Django admin for agents: the same validation and versioning as the Admin API, through the same
service, plus the version history with a rollback button per version."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.contrib.admin.widgets import FilteredSelectMultiple
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from rest_framework import serializers

from agents import services
from agents.models import AgentDefinition, AgentVersion
from agents.serializers import AgentWriteSerializer, validate_agent
from chatplatform.admin_forms import AdminForm, JSONEditor, JSONField, ServiceAdmin
from chatplatform.api.errors import ApiError
from chatplatform.api.exceptions import flatten_errors
from chatplatform.api.fields import whole_number
from chatplatform.api.permissions import caller_id
from tools.models import ToolDefinition

# Wire name → model field, as the write serializer maps them (the only place that does).
_MODEL_FIELD = {name: field.source for name, field in AgentWriteSerializer().fields.items()}
_JSON_FIELDS = ("access_rules", "rollout_policy", "collaborators", "agent_collaboration", "knowledge_bases", "custom")


def _messages(exc: serializers.ValidationError | ApiError) -> str:
    if isinstance(exc, ApiError):
        return exc.message
    return "; ".join(flatten_errors(exc.detail))


class ToolChoiceField(forms.MultipleChoiceField):
    """Tool ids picked from a list of the existing tools. Any id is passed on: the Admin API's
    validator is the one that judges them (missing, deprecated, retired, clashing functions)."""

    def valid_value(self, value: str) -> bool:
        return True


class AgentDefinitionForm(AdminForm):
    """Runs the Admin API's validator in clean(); AgentDefinitionAdmin saves through its service."""

    tool_ids = ToolChoiceField(
        label="Tool ids",
        required=False,
        widget=FilteredSelectMultiple("tools", is_stacked=False),
        help_text="The tools the model may call. Move tools from the left list to the right one.",
    )

    class Meta:
        model = AgentDefinition
        fields = [
            "agent_id",
            "base_prompt",
            "tool_ids",
            "foundation_model",
            "verification_foundation_model",
            "access_rules",
            "rollout_policy",
            "collaborators",
            "agent_collaboration",
            "knowledge_bases",
            "custom",
            "runtime_adapter",
            "dont_cache_this",
            "test_type",
        ]
        field_classes = dict.fromkeys(_JSON_FIELDS, JSONField)
        widgets = {name: JSONEditor(height="180px") for name in _JSON_FIELDS}
        help_texts = {
            "foundation_model": "offline or <provider>:<model> (openai, anthropic, bedrock), e.g. openai:gpt-4o; empty for the default.",
            "verification_foundation_model": "offline or <provider>:<model>; empty for CHAT_VERIFICATION_MODEL.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tools = ToolDefinition.objects.order_by("tool_id").values_list("tool_id", "name", "lifecycle_status")
        choices = [
            (tool_id, f"{tool_id} ({name}, {status})" if status != "active" else f"{tool_id} ({name})") for tool_id, name, status in tools
        ]
        # An id the agent holds whose tool is gone stays listed, so the validator can name it.
        known = {tool_id for tool_id, _ in choices}
        held = [tool_id for tool_id in (self.initial.get("tool_ids") or []) if isinstance(tool_id, str) and tool_id not in known]
        tool_ids = self.fields["tool_ids"]
        assert isinstance(tool_ids, ToolChoiceField)
        tool_ids.choices = [*choices, *((tool_id, f"{tool_id} (no such tool)") for tool_id in held)]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # ModelForm.clean returns cleaned_data
        if self.errors:
            return cleaned  # malformed JSON and the like: fix those before the agent rules run
        adding = self.instance._state.adding
        data = {name: cleaned[source] for name, source in _MODEL_FIELD.items() if source in cleaned}
        data["agentId"] = cleaned.get("agent_id") if adding else self.instance.pk
        if data.get("toolIds") is None:
            data["toolIds"] = []  # an empty editor means no tools
        # On add an existing agentId is refused by the form's unique check, so validate as a create.
        existing = None if adding else AgentDefinition.objects.get(pk=self.instance.pk)
        try:
            validate_agent(data, existing=existing)
        except serializers.ValidationError as exc:
            assert isinstance(exc.detail, dict)  # a serializer's errors, keyed by field
            for name, detail in exc.detail.items():
                field = _MODEL_FIELD.get(name)
                self.add_error(field if field in self.fields else None, flatten_errors(detail, name))
        self.agent_data = data
        return cleaned


class AgentVersionInline(admin.TabularInline):
    """The version history, read-only; each past version has a button that rolls back to it."""

    model = AgentVersion
    fields = ("version", "modified_by", "modified_at", "definition_link", "rollback_button")
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ("-version",)
    verbose_name_plural = "version history"

    def get_queryset(self, request: HttpRequest) -> QuerySet[AgentVersion]:
        return super().get_queryset(request).select_related("agent")

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The history belongs to the agent: whoever may see the agent sees its versions.
        return request.user.has_perm("agents.view_agentdefinition") or request.user.has_perm("agents.change_agentdefinition")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="definition")
    def definition_link(self, row: AgentVersion) -> str:
        url = reverse("admin-agent-version", kwargs={"agentId": row.agent_id, "version": row.version})
        return format_html('<a href="{}" target="_blank" rel="noopener">view JSON</a>', url)

    @admin.display(description="rollback")
    def rollback_button(self, row: AgentVersion) -> str:
        if row.version == row.agent.version:
            return "current"
        # `form` targets the separate rollback form of the change page template (see its comment).
        return format_html(
            '<button type="submit" class="button" form="agent-rollback" name="version" value="{}">Roll back to version {}</button>',
            row.version,
            row.version,
        )


@admin.register(AgentDefinition)
class AgentDefinitionAdmin(ServiceAdmin):
    form = AgentDefinitionForm
    change_form_template = "admin/agents/agentdefinition/change_form.html"
    inlines = [AgentVersionInline]
    list_display = ("agent_id", "version", "foundation_model", "tool_count", "test_type", "updated_at")
    list_filter = ("test_type", "foundation_model")
    search_fields = ("agent_id", "base_prompt")
    ordering = ("agent_id",)
    readonly_fields = ("version", "created_by", "last_modified_by", "created_at", "updated_at")

    @admin.display(description="tools")
    def tool_count(self, agent: AgentDefinition) -> int:
        return len(agent.tool_ids or [])

    def get_readonly_fields(self, request: HttpRequest, obj: AgentDefinition | None = None) -> tuple[str, ...]:
        # The agentId is the primary key: changing it would be a new agent.
        return (*self.readonly_fields, "agent_id") if obj is not None else self.readonly_fields

    def service_save(self, form: AgentDefinitionForm, *, user_id: str) -> AgentDefinition:
        return services.agent_upsert(data=form.agent_data, user_id=user_id)

    # Deletes go through the service too: its rules (collaborators) and the audit log.
    def service_delete(self, obj: AgentDefinition, *, user_id: str) -> None:
        services.agent_delete(agent_id=obj.agent_id, user_id=user_id)

    def get_urls(self) -> list[URLPattern]:
        rollback = path(
            "<path:object_id>/rollback/",
            self.admin_site.admin_view(self.rollback_view),
            name=f"{self.opts.app_label}_{self.opts.model_name}_rollback",
        )
        return [rollback, *super().get_urls()]

    def rollback_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST `version`: write that version's definition as a new version (agents.services.agent_rollback)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        agent = self.get_object(request, unquote(object_id))
        if agent is None:
            raise Http404("agent not found")
        if not self.has_change_permission(request, agent):
            raise PermissionDenied
        change_url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[quote(agent.pk)])
        version = whole_number(request.POST.get("version", ""))
        if version is None:
            messages.error(request, "version: choose a version to roll back to")
            return HttpResponseRedirect(change_url)
        try:
            updated = services.agent_rollback(agent_id=agent.pk, version=version, user_id=caller_id(request))
        except (serializers.ValidationError, ApiError) as exc:
            messages.error(request, f"Rollback refused: {_messages(exc)}")
            return HttpResponseRedirect(change_url)
        if updated.version == agent.version:
            messages.info(request, f"Version {version} equals the current definition: nothing changed.")
        else:
            self.log_change(request, updated, f"Rolled back to version {version} as version {updated.version}.")
            messages.success(request, f"Rolled back to version {version}: the agent is now at version {updated.version}.")
        return HttpResponseRedirect(change_url)
