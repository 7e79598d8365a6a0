"""Feedback on sessions (docs/api.md, "Feedback"): a user's on their own sessions, and the
operators' commands that add and update any."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat.feedback.models import ChatSessionFeedback, FeedbackStatus
from chat.feedback.selectors import session_feedback
from chat.feedback.serializers import (
    FEEDBACK_COMMAND_SCHEMA,
    AdminFeedbackRequestSerializer,
    ChatFeedbackCreateSerializer,
    FeedbackCreateSerializer,
    FeedbackRequestSerializer,
    FeedbackSerializer,
    FeedbackUpdateSerializer,
)
from chat.feedback.services import feedback_create, feedback_update
from chat.sessions.models import ChatSession
from chat.sessions.selectors import session_get
from chat.sessions.views import SESSION_ID, own_session
from chat.users.serializers import UserIdQuerySerializer
from chatplatform.api.errors import InvalidRequest
from chatplatform.api.permissions import acting_user_id, caller_id, is_admin
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, ApiViewSet, checked, ok

_FeedbackResponse = envelope("FeedbackResponse", feedback=FeedbackSerializer())
# What a user may not set on their own report; `status` they may send as `open` (docs/api.md).
_OPERATOR_FIELDS = ("internalComments", "reportedByHuman", "createdByCustomer")
# ChatSessionFeedbackForUpdate's wire names → the fields an update may change.
_FEEDBACK_UPDATES = {"status": "status", "severity": "severity", "type": "type", "userComment": "user_comment"}


def _checked(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """A nested `feedback` object validated, errors named `feedback.<field>`."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise serializers.ValidationError({"feedback": serializer.errors})
    return dict(serializer.validated_data)


def _create_feedback(fields: dict[str, Any], session: ChatSession, *, by_operator: bool, acting_user_id: str) -> ChatSessionFeedback:
    return feedback_create(
        session=session,
        feedback_id=fields.get("feedbackId"),
        message_id=str(fields["messageId"]) if fields.get("messageId") else None,
        type=fields["type"],
        user_comment=fields.get("userComment", ""),
        severity=fields.get("severity"),
        status=fields.get("status", FeedbackStatus.OPEN),
        internal_comments=fields.get("internalComments", []) if by_operator else [],
        created_by_customer=fields.get("createdByCustomer", False) if by_operator else True,
        reported_by_human=fields.get("reportedByHuman", True) if by_operator else True,
        acting_user_id=acting_user_id,
    )


class FeedbackViewSet(ApiViewSet):
    """`POST /api/chat/feedback` and `GET /api/chat/sessions/{sessionId}/feedback`: a user's feedback on their own sessions."""

    @extend_schema(
        operation_id="chat_feedback_add",
        request=inline_serializer("ChatFeedbackRequest", {"feedback": ChatFeedbackCreateSerializer()}),
        responses={200: _FeedbackResponse},  # the envelope's 200, not drf-spectacular's 201 for a `create` action
    )
    def create(self, request: Request) -> Response:
        body = checked(FeedbackRequestSerializer, request.data)
        fields = _checked(FeedbackCreateSerializer, body["feedback"])
        operator = is_admin(request.user)
        for operator_field in _OPERATOR_FIELDS:
            if operator_field in fields and not operator:
                raise InvalidRequest("is set by operators only", field=f"feedback.{operator_field}")
        if fields.get("status", FeedbackStatus.OPEN) != FeedbackStatus.OPEN and not operator:
            raise InvalidRequest("must be open: a report's status is set by operators", field="feedback.status")
        assert isinstance(request.data, dict)  # checked above
        session = own_session(request, fields["sessionId"], request.data.get("userId"))
        return ok(
            feedback=FeedbackSerializer(_create_feedback(fields, session, by_operator=operator, acting_user_id=caller_id(request))).data
        )

    @extend_schema(
        operation_id="chat_session_feedback",
        parameters=[SESSION_ID, UserIdQuerySerializer],
        responses=envelope("SessionFeedbackResponse", feedback=FeedbackSerializer(many=True)),
    )
    def for_session(self, request: Request, sessionId: str) -> Response:
        session = own_session(request, sessionId, request.query_params.get("userId"))
        return ok(feedback=FeedbackSerializer(session_feedback(session=session), many=True).data)


class FeedbackAdminViewSet(AdminApiViewSet):
    """`POST /api/chat-admin/feedback` with command addChatSessionFeedback or updateChatSessionFeedback."""

    @extend_schema(operation_id="admin_feedback_command", request=FEEDBACK_COMMAND_SCHEMA, responses=_FeedbackResponse)
    def command(self, request: Request) -> Response:
        body = checked(AdminFeedbackRequestSerializer, request.data)
        assert isinstance(request.data, dict)  # checked above
        acting = acting_user_id(request, request.data.get("userId"))
        if body["command"] == "addChatSessionFeedback":
            fields = _checked(FeedbackCreateSerializer, body["feedback"])
            session = session_get(session_id=fields["sessionId"])
            return ok(feedback=FeedbackSerializer(_create_feedback(fields, session, by_operator=True, acting_user_id=acting)).data)
        # Fields of the record outside the update rule may come back as they were read: ignored.
        update = {key: value for key, value in body["feedback"].items() if key in FeedbackUpdateSerializer().fields}
        fields = _checked(FeedbackUpdateSerializer, update)
        changes = {model: fields[wire] for wire, model in _FEEDBACK_UPDATES.items() if wire in fields}
        feedback = feedback_update(
            feedback_id=fields["feedbackId"], changes=changes, internal_comments=fields.get("internalComments"), acting_user_id=acting
        )
        return ok(feedback=FeedbackSerializer(feedback).data)
