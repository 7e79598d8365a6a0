"""Share links (docs/api.md, "Share links"): the session's user shares and revokes; anyone signed
in reads a share by its id."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat.sessions.views import SESSION_ID, own_session
from chat.shares.selectors import share_get
from chat.shares.serializers import SharedMessageSerializer, SharedSessionSerializer
from chat.shares.services import share_revoke, share_snapshot
from chat.users.serializers import UserIdQuerySerializer
from chatplatform.api.schema import envelope
from chatplatform.api.views import ApiViewSet, checked, ok

SHARE_ID = OpenApiParameter("shareId", str, OpenApiParameter.PATH)


class SessionShareViewSet(ApiViewSet):
    """`POST` and `DELETE /api/chat/sessions/{sessionId}/share`."""

    @extend_schema(
        operation_id="chat_session_share",
        parameters=[SESSION_ID],
        request=UserIdQuerySerializer,
        responses=envelope("ShareResponse", shareId=serializers.CharField(), url=serializers.URLField()),
    )
    def share(self, request: Request, sessionId: str) -> Response:
        body = checked(UserIdQuerySerializer, request.data)
        share = share_snapshot(session=own_session(request, sessionId, body.get("userId")))
        url = request.build_absolute_uri(reverse("shared-page", kwargs={"share_id": share.share_id}))
        return ok(shareId=share.share_id, url=url)

    @extend_schema(
        operation_id="chat_session_share_revoke", parameters=[SESSION_ID, UserIdQuerySerializer], responses=envelope("ShareRevokeResponse")
    )
    def revoke(self, request: Request, sessionId: str) -> Response:
        query = checked(UserIdQuerySerializer, request.query_params)
        share_revoke(session=own_session(request, sessionId, query.get("userId")))
        return ok()


class SharedViewSet(ApiViewSet):
    """`GET /api/chat/shared/{shareId}`: any signed-in user holding the link."""

    @extend_schema(
        operation_id="chat_shared_retrieve",
        parameters=[SHARE_ID],
        responses=envelope("SharedResponse", session=SharedSessionSerializer(), messages=SharedMessageSerializer(many=True)),
    )
    def retrieve(self, request: Request, shareId: str) -> Response:
        share = share_get(share_id=shareId)
        return ok(session=SharedSessionSerializer(share).data, messages=share.messages)
