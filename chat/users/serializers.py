"""A user's wire shapes (docs/api.md, "Users"): ChatUser, ChatUserLite, prefs and user search."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from agents.serializers import StrictCharField
from chat.users.models import UserType
from chatplatform.api.fields import StrictBooleanField, WholeNumberField
from chatplatform.api.schema import documented
from chatplatform.api.shapes import OutputSerializer


class ChatUserSerializer(OutputSerializer):
    """ChatUser on the wire (docs/api.md, "Users")."""

    userId = serializers.CharField(source="user_id")
    email = serializers.CharField()
    firstName = serializers.CharField(source="first_name")
    lastName = serializers.CharField(source="last_name")
    userType = serializers.ChoiceField(source="user_type", choices=UserType.values)
    customData = serializers.DictField(source="custom_data")
    roles = serializers.ListField(child=serializers.CharField())
    createDate = serializers.DateTimeField(source="create_date")
    lastUpdate = serializers.DateTimeField(source="last_update")


class ChatUserLiteSerializer(OutputSerializer):
    """ChatUserLite: the fields an admin needs to pick a user."""

    userId = serializers.CharField(source="user_id")
    email = serializers.CharField()
    firstName = serializers.CharField(source="first_name")
    lastName = serializers.CharField(source="last_name")
    userType = serializers.ChoiceField(source="user_type", choices=UserType.values)


class UserIdQuerySerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)


@documented({"type": "object"})
def check_json_object(value: Any) -> None:
    """A JSON object: user prefs, a widget's data."""
    if not isinstance(value, dict):
        raise serializers.ValidationError("must be a JSON object")


class PrefsUpdateSerializer(serializers.Serializer):
    userId = StrictCharField(required=False, allow_blank=True)
    prefs = serializers.JSONField(validators=[check_json_object])
    partial = StrictBooleanField(required=False, default=False)  # type: ignore[assignment]  # the wire name shadows Serializer.partial


class UserSearchSerializer(serializers.Serializer):
    userIdPartial = StrictCharField(required=False, allow_blank=True, max_length=255)
    limit = WholeNumberField(required=False, default=20, min_value=1, max_value=100)
