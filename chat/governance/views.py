"""A user deletes a conversation, exports their data and reads their usage; an operator erases or
exports a user (docs/api.md, "Your data")."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat.chat_apps.selectors import chat_app_get
from chat.governance.selectors import user_export
from chat.governance.serializers import UsageQuerySerializer, UsageSerializer, UserExportSerializer
from chat.governance.services import erase_user, session_delete
from chat.governance.usage import limits_for, usage_summary
from chat.sessions.views import SESSION_ID, own_session
from chat.users.models import ChatUser
from chat.users.serializers import UserIdQuerySerializer
from chat.users.services import user_get_or_create
from chatplatform.api.errors import NotFound
from chatplatform.api.permissions import acting_user_id, caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, ApiViewSet, checked, ok

USER_ID = OpenApiParameter("userId", str, OpenApiParameter.PATH)
_ExportResponse = envelope("UserExportResponse", export=UserExportSerializer())


class ConversationViewSet(ApiViewSet):
    """`DELETE /api/chat/sessions/{sessionId}`: the session and all that hangs off it (docs/data.md)."""

    @extend_schema(
        operation_id="chat_session_delete", parameters=[SESSION_ID, UserIdQuerySerializer], responses=envelope("SessionDeleteResponse")
    )
    def destroy(self, request: Request, sessionId: str) -> Response:
        query = checked(UserIdQuerySerializer, request.query_params)
        session_delete(session=own_session(request, sessionId, query.get("userId")))
        return ok()


class MyDataViewSet(ApiViewSet):
    """`GET /api/chat/user/export` and `GET /api/chat/user/usage`: the caller's own (an admin's `userId`: anyone's)."""

    @extend_schema(operation_id="chat_user_export", parameters=[UserIdQuerySerializer], responses=_ExportResponse)
    def export(self, request: Request) -> Response:
        query = checked(UserIdQuerySerializer, request.query_params)
        user_id = acting_user_id(request, query.get("userId"))
        user = request.user if user_id == request.user.pk else user_get_or_create(user_id=user_id)
        return ok(export=UserExportSerializer(user_export(user=user)).data)

    @extend_schema(
        operation_id="chat_user_usage", parameters=[UsageQuerySerializer], responses=envelope("UsageResponse", usage=UsageSerializer())
    )
    def usage(self, request: Request) -> Response:
        query = checked(UsageQuerySerializer, request.query_params)
        user_id = acting_user_id(request, query.get("userId"))
        chat_app_id = query.get("chatAppId") or None
        features = chat_app_get(chat_app_id=chat_app_id).features or {} if chat_app_id else {}
        limits = limits_for(app_features=features, chat_app_id=chat_app_id or "")
        return ok(usage=UsageSerializer(usage_summary(user_id=user_id, chat_app_id=chat_app_id, limits=limits)).data)


class UserDataAdminViewSet(AdminApiViewSet):
    """`DELETE /api/chat-admin/users/{userId}` (erasure) and `GET .../users/{userId}/export`."""

    @extend_schema(
        operation_id="admin_user_erase",
        parameters=[USER_ID],
        responses=envelope("UserEraseResponse", erased=serializers.DictField(child=serializers.IntegerField())),
    )
    def erase(self, request: Request, userId: str) -> Response:
        return ok(erased=erase_user(user_id=userId, actor=caller_id(request)))

    @extend_schema(operation_id="admin_user_export", parameters=[USER_ID], responses=_ExportResponse)
    def export(self, request: Request, userId: str) -> Response:
        user = ChatUser.objects.filter(pk=userId).first()
        if user is None:
            raise NotFound(f"user {userId} not found")
        return ok(export=UserExportSerializer(user_export(user=user)).data)
