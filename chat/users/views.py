"""`/api/chat/user`, its prefs, the token-to-cookie exchange, and user search for operators (docs/api.md, "Users")."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth import login, logout
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat.users.authentication import BearerJWTAuthentication, bearer_token, signed_in
from chat.users.selectors import users_search
from chat.users.serializers import (
    ChatUserLiteSerializer,
    ChatUserSerializer,
    PrefsUpdateSerializer,
    UserIdQuerySerializer,
    UserSearchSerializer,
)
from chat.users.services import prefs_update, user_get_or_create
from chatplatform.api.authentication import decode_token
from chatplatform.api.errors import ApiError, Code
from chatplatform.api.permissions import acting_user_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, ApiView, ApiViewSet, checked, ok


class UserViewSet(ApiViewSet):
    """`GET /api/chat/user`, `GET`/`POST /api/chat/user/prefs` (docs/api.md, "Users")."""

    @extend_schema(
        parameters=[UserIdQuerySerializer],
        responses=envelope("UserResponse", user=ChatUserSerializer()),
    )
    def retrieve(self, request: Request) -> Response:
        user_id = acting_user_id(request, request.query_params.get("userId"))
        user = request.user if user_id == request.user.pk else user_get_or_create(user_id=user_id)
        return ok(user=ChatUserSerializer(user).data)

    @extend_schema(
        parameters=[UserIdQuerySerializer],
        responses=envelope("PrefsResponse", userId=serializers.CharField(), prefs=serializers.JSONField()),
    )
    def prefs(self, request: Request) -> Response:
        user_id = acting_user_id(request, request.query_params.get("userId"))
        user = request.user if user_id == request.user.pk else user_get_or_create(user_id=user_id)
        return ok(userId=user.user_id, prefs=user.prefs)

    @extend_schema(
        request=PrefsUpdateSerializer,
        responses=envelope("PrefsUpdateResponse", prefs=serializers.JSONField()),
    )
    def update_prefs(self, request: Request) -> Response:
        body = checked(PrefsUpdateSerializer, request.data)
        user_id = acting_user_id(request, body.get("userId"))
        prefs = prefs_update(user_id=user_id, prefs=body["prefs"], partial=body["partial"])
        return ok(prefs=prefs)


class UserAdminViewSet(AdminApiViewSet):
    """`POST /api/chat-admin/users/search` (docs/api.md, "Users")."""

    @extend_schema(
        request=UserSearchSerializer,
        responses=envelope("UserSearchResponse", users=ChatUserLiteSerializer(many=True)),
    )
    def search(self, request: Request) -> Response:
        body = checked(UserSearchSerializer, request.data)
        users = users_search(user_id_partial=body.get("userIdPartial", ""), limit=body["limit"])
        return ok(users=ChatUserLiteSerializer(users, many=True).data)


# --- Browser sessions and files --------------------------------------------------------------------


class AuthSessionView(ApiView):
    """`POST /api/chat/auth/session`: a bearer token's user gets the `session` cookie, so a host
    application that signed its user in opens the chat page without a second sign-in; `DELETE`
    signs the cookie's session out (docs/api.md, "Authentication")."""

    @extend_schema(
        operation_id="chat_auth_session_start",
        request=None,
        responses=envelope("AuthSessionResponse", user=ChatUserSerializer()),
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.successful_authenticator, BearerJWTAuthentication):
            raise ApiError(
                "Authorization: Bearer <token> is required to start a browser session", code=Code.AUTHENTICATION_REQUIRED, status_code=401
            )
        login(request._request, signed_in(request), backend="django.contrib.auth.backends.ModelBackend")
        # The cookie lives no longer than the token it came from (docs/api.md, "Authentication").
        expires = decode_token(bearer_token(request.META["HTTP_AUTHORIZATION"]) or "").get("exp")
        if isinstance(expires, int | float) and expires < time.time() + settings.SESSION_COOKIE_AGE:
            request.session.set_expiry(datetime.fromtimestamp(expires, tz=UTC))
        return ok(user=ChatUserSerializer(request.user).data)

    @extend_schema(
        operation_id="chat_auth_session_end",
        request=None,
        responses=envelope("AuthSessionEndResponse"),
    )
    def delete(self, request: Request) -> Response:
        logout(request._request)
        return ok()
