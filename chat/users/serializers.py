"""A user's wire shapes (docs/api.md, "Users"): ChatUser, ChatUserLite, prefs and user search."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from agents.serializers import StrictCharField
from chat.users.models import ChatUser, UserType
from chatplatform.api.fields import StrictBooleanField, WholeNumberField
from chatplatform.api.schema import documented


class ChatUserSerializer(serializers.Serializer):
    """ChatUser on the wire (docs/api.md, "Users"). The declared fields document the schema; the
    representation is built directly because a user is rendered on hot paths."""

    userId = serializers.CharField()
    email = serializers.CharField()
    firstName = serializers.CharField()
    lastName = serializers.CharField()
    userType = serializers.ChoiceField(choices=UserType.values)
    customData = serializers.DictField()
    roles = serializers.ListField(child=serializers.CharField())
    createDate = serializers.DateTimeField()
    lastUpdate = serializers.DateTimeField()

    def to_representation(self, user: ChatUser) -> dict[str, Any]:
        return {
            "userId": user.user_id,
            "email": user.email,
            "firstName": user.first_name,
            "lastName": user.last_name,
            "userType": user.user_type,
            "customData": user.custom_data,
            "roles": user.roles,
            "createDate": user.create_date.isoformat().replace("+00:00", "Z"),
            "lastUpdate": user.last_update.isoformat().replace("+00:00", "Z"),
        }


class ChatUserLiteSerializer(serializers.Serializer):
    """ChatUserLite: the fields an admin needs to pick a user."""

    userId = serializers.CharField()
    email = serializers.CharField()
    firstName = serializers.CharField()
    lastName = serializers.CharField()
    userType = serializers.ChoiceField(choices=UserType.values)

    def to_representation(self, user: ChatUser) -> dict[str, Any]:
        return {
            "userId": user.user_id,
            "email": user.email,
            "firstName": user.first_name,
            "lastName": user.last_name,
            "userType": user.user_type,
        }


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
