"""Wire shapes of chat records: SPEC.md's camelCase names mapped to the models' snake_case."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from chat.models import ChatUser


class ChatUserSerializer(serializers.ModelSerializer):
    userId = serializers.CharField(source="user_id")
    firstName = serializers.CharField(source="first_name")
    lastName = serializers.CharField(source="last_name")
    userType = serializers.CharField(source="user_type")
    customData = serializers.JSONField(source="custom_data")
    createDate = serializers.DateTimeField(source="create_date")
    lastUpdate = serializers.DateTimeField(source="last_update")

    class Meta:
        model = ChatUser
        fields = ["userId", "email", "firstName", "lastName", "userType", "customData", "roles", "createDate", "lastUpdate"]
        read_only_fields = fields


class ChatUserLiteSerializer(ChatUserSerializer):
    class Meta(ChatUserSerializer.Meta):
        fields = ["userId", "email", "firstName", "lastName", "userType"]
        read_only_fields = fields


class UserIdQuerySerializer(serializers.Serializer):
    userId = serializers.CharField(required=False, allow_blank=True)


class PrefsUpdateSerializer(serializers.Serializer):
    userId = serializers.CharField(required=False, allow_blank=True)
    prefs = serializers.JSONField()
    partial = serializers.BooleanField(required=False, default=False)

    def validate_prefs(self, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object")
        return value


class UserSearchSerializer(serializers.Serializer):
    userIdPartial = serializers.CharField(required=False, allow_blank=True, max_length=255)
    limit = serializers.IntegerField(required=False, default=20, min_value=1, max_value=100)
