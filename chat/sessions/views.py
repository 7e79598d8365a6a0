"""A user's sessions and their messages and titles (docs/api.md, "Sessions"), and any session's
messages for an operator."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat.chat_apps.features import is_enabled
from chat.chat_apps.models import ChatApp
from chat.chat_apps.selectors import chat_app_features
from chat.sessions.models import ChatSession
from chat.sessions.search import search_words, sessions_search
from chat.sessions.selectors import Branch, branch, session_get, sessions_for_user
from chat.sessions.serializers import (
    ChatMessageSerializer,
    ChatSessionSerializer,
    MessagesQuerySerializer,
    SearchQuerySerializer,
    SearchResultSerializer,
    SessionsQuerySerializer,
    TitleRequestSerializer,
)
from chat.sessions.services import session_add_usage, session_pin, session_set_title
from chat.sessions.titles import generate_title
from chat.users.serializers import UserIdQuerySerializer
from chatplatform import llm
from chatplatform.api.errors import ApiError, Code
from chatplatform.api.permissions import acting_user_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, ApiViewSet, checked, ok

SESSION_ID = OpenApiParameter("sessionId", str, OpenApiParameter.PATH)
_SessionsResponse = envelope("SessionsResponse", sessions=ChatSessionSerializer(many=True))
_SessionResponse = envelope("SessionResponse", session=ChatSessionSerializer())
_MessagesResponse = envelope(
    "MessagesResponse",
    messages=ChatMessageSerializer(many=True),
    leafMessageId=serializers.UUIDField(allow_null=True, help_text="The branch's last message (null: no messages)."),
)


def _listed(found: Branch, include_traces: str | None) -> Response:
    """A branch's messages (docs/api.md, "Branches"), each with its siblings' ids."""
    context = {"include_traces": include_traces, "siblings": found.siblings}
    leaf = str(found.leaf_id) if found.leaf_id else None
    return ok(messages=ChatMessageSerializer(found.messages, many=True, context=context).data, leafMessageId=leaf)


def _branch_asked(session: ChatSession, query: dict[str, Any]) -> Branch:
    """The branch a messages list's parameters name (docs/api.md, "Branches")."""
    return branch(session=session, leaf_id=query.get("leafMessageId"), through_id=query.get("throughMessageId"), limit=query["limit"])


def own_session(request: Request, session_id: str, user_id: Any) -> ChatSession:
    """The session of the acting user; anyone else's, and an id that names none, is 404
    INVALID_SESSION_ID (docs/api.md, "Who may read what")."""
    return session_get(session_id=session_id, user_id=acting_user_id(request, user_id))


class SessionViewSet(ApiViewSet):
    """`GET /api/chat/sessions`, `.../sessions/search`, `.../sessions/{sessionId}/messages`, `.../title`, `.../pin`."""

    @extend_schema(operation_id="chat_sessions_list", parameters=[SessionsQuerySerializer], responses=_SessionsResponse)
    def list(self, request: Request) -> Response:
        query = checked(SessionsQuerySerializer, request.query_params)
        user_id = acting_user_id(request, query.get("userId"))
        sessions = sessions_for_user(user_id=user_id, chat_app_id=query.get("chatAppId") or None, limit=query["limit"])
        return ok(sessions=ChatSessionSerializer(sessions, many=True).data)

    @extend_schema(
        operation_id="chat_sessions_search",
        parameters=[SearchQuerySerializer],
        responses=envelope("SessionsSearchResponse", results=SearchResultSerializer(many=True)),
    )
    def search(self, request: Request) -> Response:
        # Whose conversations first: another user's userId is a 403 whatever the query holds.
        user_id = acting_user_id(request, request.query_params.get("userId"))
        query = checked(SearchQuerySerializer, request.query_params)
        words, chat_app_id = search_words(query["q"]), query.get("chatAppId") or None
        hits = sessions_search(user_id=user_id, words=words, limit=query["limit"], chat_app_id=chat_app_id)
        return ok(results=SearchResultSerializer(hits, many=True).data)

    @extend_schema(operation_id="chat_session_messages", parameters=[SESSION_ID, MessagesQuerySerializer], responses=_MessagesResponse)
    def messages(self, request: Request, sessionId: str) -> Response:
        query = checked(MessagesQuerySerializer, request.query_params)
        session = own_session(request, sessionId, query.get("userId"))
        found = _branch_asked(session, query)
        # The chat page shows each answer's traces when the chat app's traces feature is on.
        app = ChatApp.objects.filter(pk=session.chat_app_id).first()
        traces = app is not None and is_enabled(chat_app_features(app), "traces")
        return _listed(found, "users" if traces else None)

    @extend_schema(
        operation_id="chat_session_title",
        parameters=[SESSION_ID],
        request=TitleRequestSerializer,
        responses=envelope("TitleResponse", title=serializers.CharField(), session=ChatSessionSerializer()),
    )
    def title(self, request: Request, sessionId: str) -> Response:
        body = checked(TitleRequestSerializer, request.data)
        session = own_session(request, sessionId, body.get("userId"))
        title = (body.get("title") or "").strip()
        if not title:
            try:
                title, usage = async_to_sync(generate_title)(
                    question=body["userQuestionAsked"], answer=body.get("answerToQuestionFromAgent", "")
                )
            except llm.ModelError as exc:
                raise ApiError(f"the title model failed: {exc}", code=Code.INTERNAL_ERROR, status_code=502)
            session_add_usage(session_id=session.pk, usage=usage)
        session_set_title(session_id=session.pk, title=title)
        session.refresh_from_db()
        return ok(title=session.title, session=ChatSessionSerializer(session).data)

    @extend_schema(operation_id="chat_session_pin", parameters=[SESSION_ID], request=UserIdQuerySerializer, responses=_SessionResponse)
    def pin(self, request: Request, sessionId: str) -> Response:
        return self._pinned(request, sessionId, checked(UserIdQuerySerializer, request.data), pinned=True)

    @extend_schema(operation_id="chat_session_unpin", parameters=[SESSION_ID, UserIdQuerySerializer], responses=_SessionResponse)
    def unpin(self, request: Request, sessionId: str) -> Response:
        return self._pinned(request, sessionId, checked(UserIdQuerySerializer, request.query_params), pinned=False)

    def _pinned(self, request: Request, session_id: str, params: dict[str, Any], *, pinned: bool) -> Response:
        session = own_session(request, session_id, params.get("userId"))
        session_pin(session_id=session.pk, pinned=pinned)
        session.refresh_from_db()
        return ok(session=ChatSessionSerializer(session).data)


class SessionAdminViewSet(AdminApiViewSet):
    """`GET /api/chat-admin/sessions/{sessionId}/messages`: any user's, traces included."""

    @extend_schema(operation_id="admin_session_messages", parameters=[SESSION_ID, MessagesQuerySerializer], responses=_MessagesResponse)
    def messages(self, request: Request, sessionId: str) -> Response:
        query = checked(MessagesQuerySerializer, request.query_params)
        session = session_get(session_id=sessionId)
        return _listed(_branch_asked(session, query), "all")
