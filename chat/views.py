"""Chat API and Admin API views of chat records. They parse, call a service or selector, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat import selectors, services
from chat.serializers import (
    ChatUserLiteSerializer,
    ChatUserSerializer,
    PrefsUpdateSerializer,
    UserIdQuerySerializer,
    UserSearchSerializer,
)
from chatplatform.api.permissions import acting_user_id
from chatplatform.api.views import AdminApiViewSet, ApiViewSet, ok


class UserViewSet(ApiViewSet):
    """`GET /api/chat/user`, `GET`/`POST /api/chat/user/prefs` (CONTRACT §5)."""

    @extend_schema(
        parameters=[UserIdQuerySerializer],
        responses=inline_serializer("UserResponse", {"success": serializers.BooleanField(), "user": ChatUserSerializer()}),
    )
    def retrieve(self, request: Request) -> Response:
        query = UserIdQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        user_id = acting_user_id(request, query.validated_data.get("userId"))
        user = request.user if user_id == request.user.pk else services.user_get_or_create(user_id=user_id)
        return ok(user=ChatUserSerializer(user).data)

    @extend_schema(
        parameters=[UserIdQuerySerializer],
        responses=inline_serializer(
            "PrefsResponse", {"success": serializers.BooleanField(), "userId": serializers.CharField(), "prefs": serializers.JSONField()}
        ),
    )
    def prefs(self, request: Request) -> Response:
        query = UserIdQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        user_id = acting_user_id(request, query.validated_data.get("userId"))
        user = request.user if user_id == request.user.pk else services.user_get_or_create(user_id=user_id)
        return ok(userId=user.user_id, prefs=user.prefs)

    @extend_schema(
        request=PrefsUpdateSerializer,
        responses=inline_serializer("PrefsUpdateResponse", {"success": serializers.BooleanField(), "prefs": serializers.JSONField()}),
    )
    def update_prefs(self, request: Request) -> Response:
        body = PrefsUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user_id = acting_user_id(request, body.validated_data.get("userId"))
        prefs = services.prefs_update(user_id=user_id, prefs=body.validated_data["prefs"], partial=body.validated_data["partial"])
        return ok(prefs=prefs)


class UserAdminViewSet(AdminApiViewSet):
    """`POST /api/chat-admin/users/search` (CONTRACT §5)."""

    @extend_schema(
        request=UserSearchSerializer,
        responses=inline_serializer(
            "UserSearchResponse", {"success": serializers.BooleanField(), "users": ChatUserLiteSerializer(many=True)}
        ),
    )
    def search(self, request: Request) -> Response:
        body = UserSearchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        users = selectors.users_search(user_id_partial=body.validated_data.get("userIdPartial", ""), limit=body.validated_data["limit"])
        return ok(users=ChatUserLiteSerializer(users, many=True).data)
