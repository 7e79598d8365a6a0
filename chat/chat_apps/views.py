"""`/api/chat/chat-apps` for users, and the Admin API's chat apps (docs/api.md, "Chat apps")."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework.request import Request
from rest_framework.response import Response

from chat.chat_apps.selectors import chat_app_get, chat_apps_for_user, chat_apps_search
from chat.chat_apps.serializers import (
    ChatAppSearchRequestSerializer,
    ChatAppSerializer,
    ChatAppsForUserQuerySerializer,
    ChatAppUpsertRequestSerializer,
    ChatAppWriteSerializer,
)
from chat.chat_apps.services import chat_app_delete, chat_app_upsert
from chat.users.selectors import user_get
from chatplatform.api.fields import StrictCharField
from chatplatform.api.permissions import acting_user_id, caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, ApiViewSet, checked, ok

_CHAT_APP_ID = OpenApiParameter("chatAppId", str, OpenApiParameter.PATH)
_ChatAppResponse = envelope("ChatAppResponse", chatApp=ChatAppSerializer())
_ChatAppsResponse = envelope("ChatAppsResponse", chatApps=ChatAppSerializer(many=True))


class ChatAppAdminViewSet(AdminApiViewSet):
    """`/api/chat-admin/chat-app`, `/chat-app/{chatAppId}`, `/chat-apps/search` (docs/api.md, "Chat apps")."""

    @extend_schema(
        operation_id="chat_app_upsert",
        # Documented with the chat app's fields; the service validates them (with the stored app at hand).
        request=inline_serializer(
            "ChatAppUpsertRequest", {"chatApp": ChatAppWriteSerializer(), "userId": StrictCharField(required=False, allow_blank=True)}
        ),
        responses=_ChatAppResponse,
    )
    def upsert(self, request: Request) -> Response:
        body = checked(ChatAppUpsertRequestSerializer, request.data)
        return ok(chatApp=ChatAppSerializer(chat_app_upsert(data=body["chatApp"], user_id=caller_id(request))).data)

    @extend_schema(operation_id="chat_app_get", parameters=[_CHAT_APP_ID], responses=_ChatAppResponse)
    def retrieve(self, request: Request, chatAppId: str) -> Response:
        return ok(chatApp=ChatAppSerializer(chat_app_get(chat_app_id=chatAppId)).data)

    @extend_schema(
        operation_id="chat_app_delete",
        parameters=[_CHAT_APP_ID],
        responses=envelope("ChatAppDeleteResponse"),
    )
    def destroy(self, request: Request, chatAppId: str) -> Response:
        chat_app_delete(chat_app_id=chatAppId, user_id=caller_id(request))
        return ok()

    @extend_schema(operation_id="chat_apps_search", request=ChatAppSearchRequestSerializer, responses=_ChatAppsResponse)
    def search(self, request: Request) -> Response:
        body = checked(ChatAppSearchRequestSerializer, request.data)
        apps = chat_apps_search(chat_app_ids=body.get("chatAppIds"))
        return ok(chatApps=ChatAppSerializer(apps, many=True).data)


class ChatAppViewSet(ApiViewSet):
    """`GET /api/chat/chat-apps`: the chat apps a user may use (docs/api.md, "Chat apps")."""

    @extend_schema(operation_id="chat_apps_for_user", parameters=[ChatAppsForUserQuerySerializer], responses=_ChatAppsResponse)
    def list_for_user(self, request: Request) -> Response:
        query = checked(ChatAppsForUserQuerySerializer, request.query_params)
        user_id = acting_user_id(request, query.get("userId"))
        user = request.user if user_id == request.user.pk else user_get(user_id=user_id)
        # customDataFieldPathToMatchUsersEntity is accepted but does not filter: it names where a
        # user's entity lives, and chat apps have no per-entity access lists to match it against.
        apps = chat_apps_for_user(user=user, chat_app_id=query.get("chatAppId") or None, for_home_page=query["chatAppsForHomePage"])
        return ok(chatApps=ChatAppSerializer(apps, many=True).data)
