"""Wire shapes of configuration as code (docs/api.md, "Configuration as code")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from chat.config.kinds import KINDS
from chat.config.services import Action
from chatplatform.api.fields import StrictBooleanField, StrictCharField

_BOOLEAN: dict[str, Any] = {"invalid": "must be true or false"}


def _definitions(kind: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.DictField(), required=False, help_text=f"{kind}: each in its Admin API shape, without stamps, versions or counts."
    )


class ConfigSerializer(serializers.Serializer):
    """The configuration document; a kind left out is neither written nor pruned."""

    REFUSES_UNKNOWN_FIELDS = True  # an unknown kind is a 400 (chat.config.services)

    tools = _definitions("ToolDefinition")
    knowledgeBases = _definitions("KnowledgeBase")
    agents = _definitions("AgentDefinition")
    tagDefinitions = _definitions("TagDefinition")
    semanticDirectives = _definitions("SemanticDirective")
    chatApps = _definitions("ChatApp")


@extend_schema_field(ConfigSerializer)
class ConfigField(serializers.JSONField):
    """Parsed as it comes: chat.config.services names the kind, id and field of what is wrong."""


class ConfigApplyRequestSerializer(serializers.Serializer):
    config = ConfigField(help_text="As GET /api/chat-admin/config answers it: {tools, agents, ...}.")
    dryRun = StrictBooleanField(required=False, default=False, error_messages=_BOOLEAN, help_text="Report the changes; write nothing.")
    prune = StrictBooleanField(
        required=False,
        default=False,
        error_messages=_BOOLEAN,
        help_text="Delete the records of the kinds present that config does not list.",
    )
    userId = StrictCharField(required=False, allow_blank=True, max_length=255, help_text="Stamped as createdBy / lastModifiedBy.")


class ChangeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[kind.name for kind in KINDS])
    id = serializers.CharField(help_text='The definition\'s id; "<scope>.<tag>" for tag definitions, "<scope>/<id>" for directives.')
    action = serializers.ChoiceField(choices=[Action.CREATE, Action.UPDATE, Action.DELETE, Action.UNCHANGED])
