"""Chat apps' wire shapes and every rule of a chat app write (docs/api.md, "Chat apps")."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from agents.models import AgentDefinition, TestType
from agents.serializers import StrictCharField, check_not_blank, check_object
from chat.chat_apps.features import FEATURES_SCHEMA, InvalidFeatures, validate_features
from chat.chat_apps.models import ApplyRulesAs, ChatApp, ChatAppMode
from chat.users.models import UserType
from chatplatform.api.fields import StrictBooleanField, shaped
from chatplatform.api.schema import documented
from chatplatform.api.shapes import OutputSerializer

# --- chat apps (docs/api.md, "Chat apps") -----------------------------------------------------

CHAT_APP_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# Sent back by clients that post a chat app they read; the service owns them.
CHAT_APP_SERVER_MANAGED_FIELDS = frozenset({"createDate", "lastUpdate"})


def _distinct_choices(allowed: list[str]) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {"type": "string", "enum": allowed, "x-messages": {"type": f"must be one of {', '.join(allowed)}"}},
        "uniqueItems": True,
        "x-messages": {"type": f"must be a list of {', '.join(allowed)}", "uniqueItems": "lists a value more than once"},
    }


@documented({"pattern": CHAT_APP_ID_PATTERN.pattern})
def _check_chat_app_id(value: str) -> None:
    if not CHAT_APP_ID_PATTERN.match(value):
        raise serializers.ValidationError("must be 1 to 128 letters, digits, hyphens or underscores")


AGENT_NOT_FOUND = "agent_not_found"


def _check_agent_exists(value: str) -> None:
    if not AgentDefinition.objects.filter(agent_id=value).exists():
        raise serializers.ValidationError(f"agent {value} does not exist", code=AGENT_NOT_FOUND)


_check_user_types = shaped(_distinct_choices(UserType.values))
_check_modes = shaped(_distinct_choices(ChatAppMode.values))
_check_user_roles = shaped(
    {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "x-messages": {"type": "must be a list of non-empty strings", "items": "must be a list of non-empty strings"},
    }
)


# A plain string is taken as the text of these, enabled (docs/api.md, "Features").
TEXT_FEATURES = ("promptInputFieldLabel", "chatDisclaimerNotice")


@documented(FEATURES_SCHEMA)
def check_features(value: Any) -> None:
    """The one feature-shape check (chat.features), in this API's error form."""
    try:
        validate_features(value)
    except InvalidFeatures as exc:
        raise serializers.ValidationError({exc.path: [exc.message]} if exc.path else [exc.message])


class ChatAppWriteSerializer(serializers.Serializer):
    """ChatAppForCreate | ChatAppForUpdate. Bind `instance` and `partial=True` for an update:
    only the given fields change. The one place the chat app rules live (API and Django admin)."""

    REFUSES_UNKNOWN_FIELDS = True  # but for the server-managed fields, ignored

    chatAppId = StrictCharField(source="chat_app_id", max_length=128, validators=[_check_chat_app_id])
    title = StrictCharField(max_length=200, validators=[check_not_blank])
    description = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    agentId = StrictCharField(source="agent_id", max_length=128, validators=[_check_agent_exists])
    enabled = StrictBooleanField(required=False, error_messages={"invalid": "must be a boolean"})
    userTypes = serializers.JSONField(source="user_types", required=False, validators=[_check_user_types])
    userRoles = serializers.JSONField(source="user_roles", required=False, validators=[_check_user_roles])
    applyRulesAs = serializers.ChoiceField(
        source="apply_rules_as", choices=ApplyRulesAs.values, required=False, error_messages={"invalid_choice": "must be and or or"}
    )
    modesSupported = serializers.JSONField(source="modes_supported", required=False, validators=[_check_modes])
    features = serializers.JSONField(required=False, validators=[check_features])
    dontCacheThis = StrictBooleanField(source="dont_cache_this", required=False, error_messages={"invalid": "must be a boolean"})
    testType = serializers.ChoiceField(
        source="test_type", choices=TestType.choices, required=False, allow_null=True, error_messages={"invalid_choice": "must be mock"}
    )
    # Days a session is kept after its last message; null: CHAT_RETENTION_DAYS (docs/data.md).
    retentionDays = serializers.IntegerField(
        source="retention_days",
        required=False,
        allow_null=True,
        min_value=1,
        max_value=2**31 - 1,  # the column is an integer
        error_messages={
            "invalid": "must be a whole number of at least 1, or null",
            "min_value": "must be at least 1, or null",
            "max_value": "must be at most 2147483647",
        },
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields) - CHAT_APP_SERVER_MANAGED_FIELDS)
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a field of a chat app"]})
        return super().to_internal_value(data)


def validate_chat_app(data: Any, *, existing: ChatApp | None) -> dict[str, Any]:
    """The model fields a chat app write sets, after every rule; ValidationError (unwrapped) otherwise."""
    serializer = ChatAppWriteSerializer(instance=existing, data=data, partial=existing is not None)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ChatAppSerializer(OutputSerializer):
    """ChatApp as docs/api.md "Chat apps" lists its fields."""

    chatAppId = serializers.CharField(source="chat_app_id")
    title = serializers.CharField()
    description = serializers.CharField()
    agentId = serializers.CharField(source="agent_id")
    enabled = serializers.BooleanField()
    userTypes = serializers.JSONField(source="user_types")
    userRoles = serializers.JSONField(source="user_roles")
    applyRulesAs = serializers.CharField(source="apply_rules_as")
    modesSupported = serializers.JSONField(source="modes_supported")
    features = serializers.JSONField()
    dontCacheThis = serializers.BooleanField(source="dont_cache_this")
    testType = serializers.CharField(source="test_type", allow_null=True)
    retentionDays = serializers.IntegerField(source="retention_days", allow_null=True)
    createDate = serializers.DateTimeField(source="create_date")
    lastUpdate = serializers.DateTimeField(source="last_update")


class ChatAppUpsertRequestSerializer(serializers.Serializer):
    chatApp = serializers.JSONField(
        validators=[check_object], help_text="ChatAppForCreate, or ChatAppForUpdate: chatAppId and the fields to change."
    )
    userId = StrictCharField(required=False, allow_blank=True, help_text="Accepted like other writes; chat apps keep no stamps.")


class ChatAppSearchRequestSerializer(serializers.Serializer):
    chatAppIds = serializers.ListField(child=StrictCharField(), required=False, allow_null=True)
    userId = StrictCharField(required=False, allow_blank=True)


class ChatAppsForUserQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    chatAppId = StrictCharField(required=False, allow_blank=True)
    chatAppsForHomePage = serializers.BooleanField(required=False, default=False)
    customDataFieldPathToMatchUsersEntity = serializers.CharField(
        required=False, allow_blank=True, help_text="Accepted for compatibility; chat apps have no entity-based access control yet."
    )
