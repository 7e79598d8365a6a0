"""Chat API and Admin API views of chat records. They parse, call a service or selector, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat import selectors, services
from chat.serializers import (
    ChatAppSearchRequestSerializer,
    ChatAppSerializer,
    ChatAppsForUserQuerySerializer,
    ChatAppUpsertRequestSerializer,
    ChatAppWriteSerializer,
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
        user_id = acting_user_id(request, request.query_params.get("userId"))
        user = request.user if user_id == request.user.pk else services.user_get_or_create(user_id=user_id)
        return ok(user=ChatUserSerializer(user).data)

    @extend_schema(
        parameters=[UserIdQuerySerializer],
        responses=inline_serializer(
            "PrefsResponse", {"success": serializers.BooleanField(), "userId": serializers.CharField(), "prefs": serializers.JSONField()}
        ),
    )
    def prefs(self, request: Request) -> Response:
        user_id = acting_user_id(request, request.query_params.get("userId"))
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


_CHAT_APP_ID = OpenApiParameter("chatAppId", str, OpenApiParameter.PATH)
_ChatAppResponse = inline_serializer("ChatAppResponse", {"success": serializers.BooleanField(), "chatApp": ChatAppSerializer()})
_ChatAppsResponse = inline_serializer("ChatAppsResponse", {"success": serializers.BooleanField(), "chatApps": ChatAppSerializer(many=True)})


class ChatAppAdminViewSet(AdminApiViewSet):
    """`/api/chat-admin/chat-app`, `/chat-app/{chatAppId}`, `/chat-apps/search` (CONTRACT §5)."""

    @extend_schema(
        operation_id="chat_app_upsert",
        # Documented with the chat app's fields; the service validates them (with the stored app at hand).
        request=inline_serializer(
            "ChatAppUpsertRequest", {"chatApp": ChatAppWriteSerializer(), "userId": serializers.CharField(required=False)}
        ),
        responses=_ChatAppResponse,
    )
    def upsert(self, request: Request) -> Response:
        body = ChatAppUpsertRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return ok(chatApp=ChatAppSerializer(services.chat_app_upsert(data=body.validated_data["chatApp"])).data)

    @extend_schema(operation_id="chat_app_get", parameters=[_CHAT_APP_ID], responses=_ChatAppResponse)
    def retrieve(self, request: Request, chatAppId: str) -> Response:
        return ok(chatApp=ChatAppSerializer(selectors.chat_app_get(chat_app_id=chatAppId)).data)

    @extend_schema(
        operation_id="chat_app_delete",
        parameters=[_CHAT_APP_ID],
        responses=inline_serializer("ChatAppDeleteResponse", {"success": serializers.BooleanField()}),
    )
    def destroy(self, request: Request, chatAppId: str) -> Response:
        services.chat_app_delete(chat_app_id=chatAppId)
        return ok()

    @extend_schema(operation_id="chat_apps_search", request=ChatAppSearchRequestSerializer, responses=_ChatAppsResponse)
    def search(self, request: Request) -> Response:
        body = ChatAppSearchRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        apps = selectors.chat_apps_search(chat_app_ids=body.validated_data.get("chatAppIds"))
        return ok(chatApps=ChatAppSerializer(apps, many=True).data)


class ChatAppViewSet(ApiViewSet):
    """`GET /api/chat/chat-apps`: the chat apps a user may use (CONTRACT §5)."""

    @extend_schema(operation_id="chat_apps_for_user", parameters=[ChatAppsForUserQuerySerializer], responses=_ChatAppsResponse)
    def list_for_user(self, request: Request) -> Response:
        query = ChatAppsForUserQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        user_id = acting_user_id(request, query.validated_data.get("userId"))
        user = request.user if user_id == request.user.pk else selectors.user_get(user_id=user_id)
        # customDataFieldPathToMatchUsersEntity is accepted but does not filter: it names where a
        # user's entity lives, and chat apps have no per-entity access lists to match it against.
        apps = selectors.chat_apps_for_user(
            user=user, chat_app_id=query.validated_data.get("chatAppId") or None, for_home_page=query.validated_data["chatAppsForHomePage"]
        )
        return ok(chatApps=ChatAppSerializer(apps, many=True).data)
