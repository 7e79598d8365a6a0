"""Feedback's wire shapes (docs/api.md, "Feedback"): the record, its internal comments, and what a
user and an operator may send."""

from __future__ import annotations

import re
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import PolymorphicProxySerializer, inline_serializer
from rest_framework import serializers

from agents.serializers import StrictCharField, check_not_blank, check_object
from chat.feedback.models import (
    CommentStatus,
    CommentType,
    FeedbackSeverity,
    FeedbackStatus,
    FeedbackType,
)
from chatplatform.api.fields import StrictBooleanField
from chatplatform.api.shapes import OutputSerializer, iso


class _StampField(StrictCharField):
    """A time the service stamps: any string is taken on writes (and ignored), ISO 8601 on reads."""

    def to_representation(self, value: Any) -> str:
        return iso(value)


class InternalCommentSerializer(OutputSerializer):
    """An internal comment (docs/api.md, "Feedback"). On writes `userId` and `createdOn` are the service's
    stamps (a comment naming an existing commentId keeps its own); `comment` is required."""

    REFUSES_UNKNOWN_FIELDS = True

    commentId = StrictCharField(source="comment_id", required=False, max_length=128)
    userId = StrictCharField(source="user_id", required=False, allow_blank=True)
    comment = StrictCharField(max_length=10_000, trim_whitespace=False, validators=[check_not_blank])
    createdOn = _StampField(source="created_on", required=False, allow_blank=True)
    type = serializers.ChoiceField(choices=CommentType.values, required=False)
    status = serializers.ChoiceField(choices=CommentStatus.values, required=False)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a field of an internal comment"]})
        return super().to_internal_value(data)


class FeedbackSerializer(OutputSerializer):
    """ChatSessionFeedback (docs/api.md, "Feedback"). Read it with `internal_comments` prefetched."""

    feedbackId = serializers.CharField(source="feedback_id")
    sessionId = serializers.UUIDField(source="session_id")
    userId = serializers.CharField(source="user_id")
    messageId = serializers.CharField(source="message_id", allow_null=True)
    reportedByHuman = serializers.BooleanField(source="reported_by_human")
    createdByCustomer = serializers.BooleanField(source="created_by_customer")
    status = serializers.ChoiceField(choices=FeedbackStatus.values)
    severity = serializers.ChoiceField(choices=FeedbackSeverity.values, allow_null=True)
    type = serializers.ChoiceField(choices=FeedbackType.values)
    userComment = serializers.CharField(source="user_comment")
    internalComments = InternalCommentSerializer(source="internal_comments", many=True)
    createdOn = serializers.DateTimeField(source="created_on")
    updatedOn = serializers.DateTimeField(source="updated_on")


_FEEDBACK_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
_USER_STATUS_RULE: dict[str, Any] = {"invalid_choice": "must be open: a report's status is set by operators"}
TYPE_RULE: dict[str, Any] = {"invalid_choice": "must be one of the 27 feedback types: " + ", ".join(FeedbackType.values)}


_check_feedback_id = RegexValidator(_FEEDBACK_ID, "must be 1 to 128 letters, digits or . _ : -")


class FeedbackCreateSerializer(serializers.Serializer):
    """ChatSessionFeedbackForCreate. A chat user sets the first five fields; an operator all of them."""

    feedbackId = StrictCharField(required=False, validators=[_check_feedback_id])
    # Any string: one that names no session of the caller's is 404 INVALID_SESSION_ID, whatever its form (docs/api.md).
    sessionId = StrictCharField()
    messageId = serializers.UUIDField(required=False, allow_null=True, error_messages={"invalid": "must be a message id (UUID)"})
    type = serializers.ChoiceField(choices=FeedbackType.values, error_messages=TYPE_RULE)
    userComment = StrictCharField(required=False, allow_blank=True, max_length=1000, trim_whitespace=False)
    severity = serializers.ChoiceField(choices=FeedbackSeverity.values, required=False, allow_null=True)
    status = serializers.ChoiceField(choices=FeedbackStatus.values, required=False)
    internalComments = InternalCommentSerializer(many=True, required=False)
    reportedByHuman = StrictBooleanField(required=False)
    createdByCustomer = StrictBooleanField(required=False)
    userId = StrictCharField(required=False, allow_blank=True, help_text="Ignored: feedback belongs to the session's user.")


class ChatFeedbackCreateSerializer(FeedbackCreateSerializer):
    """The reference system's create shape, as its chat client sends it: `severity` is the user's to
    choose, `status` only `open` (docs/api.md, "Feedback"); the operator's fields are refused."""

    status = serializers.ChoiceField(choices=[FeedbackStatus.OPEN], required=False, error_messages=_USER_STATUS_RULE)
    internalComments = reportedByHuman = createdByCustomer = None  # type: ignore[assignment]  # DRF's way to drop a field


class FeedbackUpdateSerializer(serializers.Serializer):
    """ChatSessionFeedbackForUpdate: the feedback's id and what an update may change (docs/api.md, "Feedback"):
    status, severity, type, userComment, internalComments (the whole list, in order). Other fields
    of the record may be sent back as read; they are left as they are."""

    feedbackId = StrictCharField()
    status = serializers.ChoiceField(choices=FeedbackStatus.values, required=False)
    severity = serializers.ChoiceField(choices=FeedbackSeverity.values, required=False, allow_null=True)
    type = serializers.ChoiceField(choices=FeedbackType.values, required=False, error_messages=TYPE_RULE)
    userComment = StrictCharField(required=False, allow_blank=True, max_length=1000, trim_whitespace=False)
    internalComments = InternalCommentSerializer(many=True, required=False)


class FeedbackRequestSerializer(serializers.Serializer):
    feedback = serializers.JSONField(validators=[check_object])


class AdminFeedbackRequestSerializer(serializers.Serializer):
    command = serializers.ChoiceField(choices=["addChatSessionFeedback", "updateChatSessionFeedback"])
    feedback = serializers.JSONField(validators=[check_object])


# The schema of each command's body: the view validates `feedback` with the serializer named here.
FEEDBACK_COMMAND_SCHEMA = PolymorphicProxySerializer(
    component_name="AdminFeedbackRequest",
    serializers={
        "addChatSessionFeedback": inline_serializer(
            "AdminFeedbackAdd",
            {"command": serializers.ChoiceField(choices=["addChatSessionFeedback"]), "feedback": FeedbackCreateSerializer()},
        ),
        "updateChatSessionFeedback": inline_serializer(
            "AdminFeedbackUpdate",
            {"command": serializers.ChoiceField(choices=["updateChatSessionFeedback"]), "feedback": FeedbackUpdateSerializer()},
        ),
    },
    resource_type_field_name="command",
)
