"""Chat API and Admin API views of chat records. They parse, call a service or selector, render."""

from __future__ import annotations

from typing import Any

import orjson
from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth import login, logout
from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from chat import insights, selectors, services, widgets
from chat.authentication import BearerJWTAuthentication
from chat.features import is_enabled
from chat.files import INLINE_MIME_TYPES
from chat.models import ChatApp, ChatSession, ChatSessionFeedback, FeedbackStatus, SessionInsight
from chat.serializers import (
    FEEDBACK_COMMAND_SCHEMA,
    AdminFeedbackRequestSerializer,
    AnalysisSerializer,
    ChatAppSearchRequestSerializer,
    ChatAppSerializer,
    ChatAppsForUserQuerySerializer,
    ChatAppUpsertRequestSerializer,
    ChatAppWriteSerializer,
    ChatFeedbackCreateSerializer,
    ChatMessageFileSerializer,
    ChatMessageSerializer,
    ChatSessionSerializer,
    ChatUserLiteSerializer,
    ChatUserSerializer,
    ConverseRequestSerializer,
    ConverseResponseSerializer,
    FeedbackCreateSerializer,
    FeedbackRequestSerializer,
    FeedbackSerializer,
    FeedbackUpdateSerializer,
    FileUploadSerializer,
    InsightsSerializer,
    MessagesQuerySerializer,
    PrefsUpdateSerializer,
    SessionSearchRequestSerializer,
    SessionsQuerySerializer,
    TitleRequestSerializer,
    UserIdQuerySerializer,
    UserSearchSerializer,
    WidgetDataWriteSerializer,
)
from chat.turn.titles import generate_title
from chatplatform import llm
from chatplatform.api.errors import ApiError, Code, InvalidRequest
from chatplatform.api.fields import StrictCharField
from chatplatform.api.pagination import MAX_PAGE_SIZE, page_size
from chatplatform.api.permissions import acting_user_id
from chatplatform.api.views import AdminApiViewSet, ApiView, ApiViewSet, ok, ok_encoded


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
            "ChatAppUpsertRequest", {"chatApp": ChatAppWriteSerializer(), "userId": StrictCharField(required=False, allow_blank=True)}
        ),
        responses=_ChatAppResponse,
    )
    def upsert(self, request: Request) -> Response:
        body = ChatAppUpsertRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return ok(chatApp=ChatAppSerializer(services.chat_app_upsert(data=body.validated_data["chatApp"], user_id=request.user.pk)).data)

    @extend_schema(operation_id="chat_app_get", parameters=[_CHAT_APP_ID], responses=_ChatAppResponse)
    def retrieve(self, request: Request, chatAppId: str) -> Response:
        return ok(chatApp=ChatAppSerializer(selectors.chat_app_get(chat_app_id=chatAppId)).data)

    @extend_schema(
        operation_id="chat_app_delete",
        parameters=[_CHAT_APP_ID],
        responses=inline_serializer("ChatAppDeleteResponse", {"success": serializers.BooleanField()}),
    )
    def destroy(self, request: Request, chatAppId: str) -> Response:
        services.chat_app_delete(chat_app_id=chatAppId, user_id=request.user.pk)
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


# --- Sessions, messages, titles, feedback (CONTRACT §5) ------------------------------------------

_SESSION_ID = OpenApiParameter("sessionId", str, OpenApiParameter.PATH)
_SessionsResponse = inline_serializer(
    "SessionsResponse", {"success": serializers.BooleanField(), "sessions": ChatSessionSerializer(many=True)}
)
_MessagesResponse = inline_serializer(
    "MessagesResponse", {"success": serializers.BooleanField(), "messages": ChatMessageSerializer(many=True)}
)
_FeedbackResponse = inline_serializer("FeedbackResponse", {"success": serializers.BooleanField(), "feedback": FeedbackSerializer()})


def _own_session(request: Request, session_id: str, user_id: Any) -> ChatSession:
    """The session of the acting user; anyone else's is 404 INVALID_SESSION_ID (CONTRACT §3)."""
    return selectors.session_get(session_id=session_id, user_id=acting_user_id(request, user_id))


SESSIONS_PAGE = 20  # SPEC.md: `limit` defaults to 20


class SessionViewSet(ApiViewSet):
    """`GET /api/chat/sessions`, `.../sessions/{sessionId}/messages`, `/title`, `/feedback`."""

    @extend_schema(operation_id="chat_sessions_list", parameters=[SessionsQuerySerializer], responses=_SessionsResponse)
    def list(self, request: Request) -> Response:
        # A frontend's most frequent read: three plain parameters parsed by hand (a DRF serializer
        # costs more than the query here); SessionsQuerySerializer documents the same rules.
        params = request.query_params
        user_id = acting_user_id(request, params.get("userId"))
        limit = page_size(params.get("limit"), field="limit", default=SESSIONS_PAGE, maximum=MAX_PAGE_SIZE)
        chat_app_id = params.get("chatAppId") or None
        if chat_app_id and "\x00" in chat_app_id:  # as SessionsQuerySerializer's StrictCharField
            raise InvalidRequest("Null characters are not allowed.", field="chatAppId")
        sessions = selectors.sessions_for_user(user_id=user_id, chat_app_id=chat_app_id, limit=limit)
        wire = ChatSessionSerializer()
        return ok_encoded(orjson.dumps({"success": True, "sessions": [wire.to_representation(session) for session in sessions]}))

    @extend_schema(operation_id="chat_session_messages", parameters=[_SESSION_ID, MessagesQuerySerializer], responses=_MessagesResponse)
    def messages(self, request: Request, sessionId: str) -> Response:
        query = MessagesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        session = _own_session(request, sessionId, query.validated_data.get("userId"))
        messages = selectors.session_messages(session=session, limit=query.validated_data["limit"])
        # A chat page shows each answer's traces when the chat app's traces feature is on (issue 21).
        app = ChatApp.objects.filter(pk=session.chat_app_id).first()
        traces = app is not None and is_enabled(selectors.chat_app_features(app), "traces")
        return ok(messages=ChatMessageSerializer(messages, many=True, context={"include_traces": traces}).data)

    @extend_schema(
        operation_id="chat_session_title",
        parameters=[_SESSION_ID],
        request=TitleRequestSerializer,
        responses=inline_serializer(
            "TitleResponse",
            {"success": serializers.BooleanField(), "title": serializers.CharField(), "session": ChatSessionSerializer()},
        ),
    )
    def title(self, request: Request, sessionId: str) -> Response:
        body = TitleRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        session = _own_session(request, sessionId, body.validated_data.get("userId"))
        title = (body.validated_data.get("title") or "").strip()
        if not title:
            try:
                title, usage = async_to_sync(generate_title)(
                    question=body.validated_data["userQuestionAsked"], answer=body.validated_data.get("answerToQuestionFromAgent", "")
                )
            except llm.ModelError as exc:
                raise ApiError(f"the title model failed: {exc}", code=Code.INTERNAL_ERROR, status_code=502)
            services.session_add_usage(session_id=session.pk, usage=usage)
        services.session_set_title(session_id=session.pk, title=title)
        session.refresh_from_db()
        return ok(title=session.title, session=ChatSessionSerializer(session).data)

    @extend_schema(
        operation_id="chat_session_feedback",
        parameters=[_SESSION_ID, UserIdQuerySerializer],
        responses=inline_serializer(
            "SessionFeedbackResponse", {"success": serializers.BooleanField(), "feedback": FeedbackSerializer(many=True)}
        ),
    )
    def feedback(self, request: Request, sessionId: str) -> Response:
        session = _own_session(request, sessionId, request.query_params.get("userId"))
        return ok(feedback=FeedbackSerializer(selectors.session_feedback(session=session), many=True).data)


def _checked(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """A nested `feedback` object validated, errors named `feedback.<field>`."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise serializers.ValidationError({"feedback": serializer.errors})
    return dict(serializer.validated_data)


def _create_feedback(fields: dict[str, Any], session: ChatSession, *, by_operator: bool, acting_user_id: str) -> ChatSessionFeedback:
    return services.feedback_create(
        session=session,
        feedback_id=fields.get("feedbackId"),
        message_id=str(fields["messageId"]) if fields.get("messageId") else None,
        type=fields["type"],
        user_comment=fields.get("userComment", ""),
        severity=fields.get("severity"),
        # What a customer may not set about their own report: its workflow status and internal notes.
        status=fields.get("status", FeedbackStatus.OPEN) if by_operator else FeedbackStatus.OPEN,
        internal_comments=fields.get("internalComments", []) if by_operator else [],
        created_by_customer=fields.get("createdByCustomer", False) if by_operator else True,
        reported_by_human=fields.get("reportedByHuman", True) if by_operator else True,
        acting_user_id=acting_user_id,
    )


class FeedbackViewSet(ApiViewSet):
    """`POST /api/chat/feedback`: a user's feedback on one of their sessions."""

    @extend_schema(
        operation_id="chat_feedback_add",
        request=inline_serializer("ChatFeedbackRequest", {"feedback": ChatFeedbackCreateSerializer()}),
        responses=_FeedbackResponse,
    )
    def create(self, request: Request) -> Response:
        body = FeedbackRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = _checked(FeedbackCreateSerializer, body.validated_data["feedback"])
        for operator_field in ("status", "internalComments", "reportedByHuman", "createdByCustomer"):
            if operator_field in fields:
                raise InvalidRequest("is set by operators only", field=f"feedback.{operator_field}")
        session = _own_session(request, str(fields["sessionId"]), request.data.get("userId"))
        return ok(feedback=FeedbackSerializer(_create_feedback(fields, session, by_operator=False, acting_user_id=request.user.pk)).data)


# ChatSessionFeedbackForUpdate's wire names → the fields an update may change (CONTRACT §5).
_FEEDBACK_UPDATES = {"status": "status", "severity": "severity", "type": "type", "userComment": "user_comment"}


class FeedbackAdminViewSet(AdminApiViewSet):
    """`POST /api/chat-admin/feedback` with command addChatSessionFeedback or updateChatSessionFeedback."""

    @extend_schema(operation_id="admin_feedback_command", request=FEEDBACK_COMMAND_SCHEMA, responses=_FeedbackResponse)
    def command(self, request: Request) -> Response:
        body = AdminFeedbackRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        acting = acting_user_id(request, request.data.get("userId"))
        if body.validated_data["command"] == "addChatSessionFeedback":
            fields = _checked(FeedbackCreateSerializer, body.validated_data["feedback"])
            session = selectors.session_get(session_id=str(fields["sessionId"]))
            return ok(feedback=FeedbackSerializer(_create_feedback(fields, session, by_operator=True, acting_user_id=acting)).data)
        # Fields of the record outside the update rule may come back as they were read: ignored.
        update = {key: value for key, value in body.validated_data["feedback"].items() if key in FeedbackUpdateSerializer().fields}
        fields = _checked(FeedbackUpdateSerializer, update)
        changes = {model: fields[wire] for wire, model in _FEEDBACK_UPDATES.items() if wire in fields}
        feedback = services.feedback_update(
            feedback_id=fields["feedbackId"], changes=changes, internal_comments=fields.get("internalComments"), acting_user_id=acting
        )
        return ok(feedback=FeedbackSerializer(feedback).data)


_InsightsResponse = inline_serializer(
    "SessionInsightsResponse",
    {
        "success": serializers.BooleanField(),
        "insights": InsightsSerializer(allow_null=True),
        "analysis": AnalysisSerializer(allow_null=True, help_text="where the analysis stands; null when never requested"),
    },
)


def _insights_answer(insight: SessionInsight | None) -> Response:
    has_record = insight is not None and insight.generated_at is not None
    return ok(
        insights=InsightsSerializer(insight).data if has_record else None,
        analysis=AnalysisSerializer(insight).data if insight is not None else None,
    )


class SessionAdminViewSet(AdminApiViewSet):
    """`GET /api/chat-admin/sessions/{sessionId}/messages`, `POST /api/chat-admin/sessions/search`,
    `GET`/`POST /api/chat-admin/sessions/{sessionId}/insights`."""

    @extend_schema(operation_id="admin_session_messages", parameters=[_SESSION_ID, MessagesQuerySerializer], responses=_MessagesResponse)
    def messages(self, request: Request, sessionId: str) -> Response:
        query = MessagesQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        session = selectors.session_get(session_id=sessionId)
        messages = selectors.session_messages(session=session, limit=query.validated_data["limit"])
        return ok(messages=ChatMessageSerializer(messages, many=True, context={"include_traces": True}).data)

    @extend_schema(operation_id="admin_session_insights", parameters=[_SESSION_ID], responses=_InsightsResponse)
    def insights(self, request: Request, sessionId: str) -> Response:
        session = selectors.session_get(session_id=sessionId)
        return _insights_answer(selectors.session_insight(session=session))

    @extend_schema(operation_id="admin_session_insights_regenerate", parameters=[_SESSION_ID], request=None, responses=_InsightsResponse)
    def regenerate_insights(self, request: Request, sessionId: str) -> Response:
        session = selectors.session_get(session_id=sessionId)
        try:
            insights.regenerate(session=session)
        except (llm.ModelError, insights.UnusableAnswer) as exc:
            raise ApiError(f"the insights model failed: {exc}", code=Code.INTERNAL_ERROR, status_code=502)
        return _insights_answer(selectors.session_insight(session=session))

    @extend_schema(
        operation_id="admin_sessions_search",
        request=SessionSearchRequestSerializer,
        responses=inline_serializer(
            "SessionSearchResponse",
            {
                "success": serializers.BooleanField(),
                "sessions": ChatSessionSerializer(many=True),
                "total": serializers.IntegerField(),
                "pageSize": serializers.IntegerField(),
                "scrollId": serializers.CharField(required=False),
            },
        ),
    )
    def search(self, request: Request) -> Response:
        body = SessionSearchRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        filters = body.validated_data.get("search")
        # CONTRACT §5: size and scrollId are top-level, also accepted inside `search`.
        size = page_size(body.validated_data.get("size", (filters or {}).get("size")))
        scroll_id = body.validated_data.get("scrollId") or (filters or {}).get("scrollId")
        criteria = {
            key: value for key, value in (filters or {}).items() if key not in ("size", "scrollId", "includeInsights", "includeFeedback")
        }
        # A continuation may send its scrollId alone; the token carries the search.
        search = selectors.SessionSearch.from_request(criteria) if criteria or not scroll_id else None
        sessions, total, next_scroll, _ = selectors.sessions_search(search=search, size=size, scroll_id=scroll_id)
        include_insights, include_feedback = (filters or {}).get("includeInsights"), (filters or {}).get("includeFeedback")
        rows = ChatSessionSerializer(sessions, many=True).data
        if include_insights or include_feedback:
            extras = selectors.sessions_extras(sessions, insights=bool(include_insights), feedback=bool(include_feedback))
            for row, session in zip(rows, sessions, strict=True):
                extra = extras[session.pk]
                if include_insights:
                    row["insights"] = InsightsSerializer(extra["insights"]).data if extra["insights"] else None
                if include_feedback:
                    row["feedback"] = FeedbackSerializer(extra["feedback"], many=True).data
        fields: dict[str, Any] = {"sessions": rows, "total": total, "pageSize": size}
        if next_scroll:
            fields["scrollId"] = next_scroll
        return ok(**fields)


# --- Browser sessions and files (issue 21) ---------------------------------------------------------


class AuthSessionView(ApiView):
    """`POST /api/chat/auth/session`: a bearer token's user gets the `session` cookie, so a host
    application that signed its user in opens the chat page without a second sign-in; `DELETE`
    signs the cookie's session out (CONTRACT §13)."""

    @extend_schema(
        operation_id="chat_auth_session_start",
        request=None,
        responses=inline_serializer("AuthSessionResponse", {"success": serializers.BooleanField(), "user": ChatUserSerializer()}),
    )
    def post(self, request: Request) -> Response:
        if not isinstance(request.successful_authenticator, BearerJWTAuthentication):
            raise ApiError(
                "Authorization: Bearer <token> is required to start a browser session", code=Code.AUTHENTICATION_REQUIRED, status_code=401
            )
        login(request._request, request.user, backend="django.contrib.auth.backends.ModelBackend")
        return ok(user=ChatUserSerializer(request.user).data)

    @extend_schema(
        operation_id="chat_auth_session_end",
        request=None,
        responses=inline_serializer("AuthSessionEndResponse", {"success": serializers.BooleanField()}),
    )
    def delete(self, request: Request) -> Response:
        logout(request._request)
        return ok()


_FILE_ID = OpenApiParameter("fileId", str, OpenApiParameter.PATH)
_FileResponse = inline_serializer("FileResponse", {"success": serializers.BooleanField(), "file": ChatMessageFileSerializer()})
# Multipart framing around a file: a body larger than the limit plus this is refused unread.
_MULTIPART_SLACK = 64 * 1024


class FileViewSet(ApiViewSet):
    """`POST /api/chat/files` (upload), `GET /api/chat/files/{fileId}` and `.../content` (the owner only)."""

    parser_classes = [MultiPartParser]

    @extend_schema(operation_id="chat_file_upload", request={"multipart/form-data": FileUploadSerializer}, responses=_FileResponse)
    def upload(self, request: Request) -> Response:
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if declared.isdigit() and int(declared) > settings.CHAT_UPLOAD_MAX_BYTES + _MULTIPART_SLACK:
            raise ApiError(f"file: must be at most {settings.CHAT_UPLOAD_MAX_BYTES} bytes", status_code=413)
        body = FileUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        stored = services.file_store(user=request.user, chat_app_id=body.validated_data["chatAppId"], upload=body.validated_data["file"])
        return ok(file=stored.as_message_file())

    @extend_schema(operation_id="chat_file_get", parameters=[_FILE_ID], responses=_FileResponse)
    def retrieve(self, request: Request, fileId: str) -> Response:
        return ok(file=selectors.file_get(file_id=fileId, user=request.user).as_message_file())

    @extend_schema(
        operation_id="chat_file_content",
        parameters=[_FILE_ID],
        responses={(200, "*/*"): OpenApiTypes.BINARY},
        description="The file's bytes, for its owner only, with its type as uploaded. Raster images are sent inline, anything else "
        "as an attachment.",
    )
    def content(self, request: Request, fileId: str) -> HttpResponse:
        file = selectors.file_get(file_id=fileId, user=request.user)
        response = HttpResponse(selectors.file_content(file), content_type=file.mime_type)
        disposition = "inline" if file.mime_type in INLINE_MIME_TYPES else "attachment"
        response["Content-Disposition"] = content_disposition_header(disposition == "attachment", file.name)
        # Whatever the bytes are, they never run as a page of this origin.
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, max-age=3600"
        return response


# --- The widget runtime's server side (issue 22, CONTRACT §13) -------------------------------------

# widgets.check_tag_reference's rule.
_NAME = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,100}$"}
_SCOPE = OpenApiParameter("scope", _NAME, OpenApiParameter.PATH)
_TAG = OpenApiParameter("tag", _NAME, OpenApiParameter.PATH)
_WidgetDataResponse = inline_serializer(
    "WidgetDataResponse",
    {"success": serializers.BooleanField(), "data": serializers.JSONField(allow_null=True, help_text="null when nothing is stored")},
)


class WidgetDataViewSet(ApiViewSet):
    """`GET`/`POST`/`DELETE /api/chat/widget-data/{scope}/{tag}`: a widget's object per user and tag."""

    @extend_schema(operation_id="chat_widget_data_get", parameters=[_SCOPE, _TAG, UserIdQuerySerializer], responses=_WidgetDataResponse)
    def retrieve(self, request: Request, scope: str, tag: str) -> Response:
        widgets.check_tag_reference(scope, tag)
        user_id = acting_user_id(request, request.query_params.get("userId"))
        return ok(data=widgets.widget_data_get(user_id=user_id, scope=scope, tag=tag))

    @extend_schema(
        operation_id="chat_widget_data_set", parameters=[_SCOPE, _TAG], request=WidgetDataWriteSerializer, responses=_WidgetDataResponse
    )
    def upsert(self, request: Request, scope: str, tag: str) -> Response:
        widgets.check_tag_reference(scope, tag)
        body = WidgetDataWriteSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user_id = acting_user_id(request, body.validated_data.get("userId"))
        data = widgets.widget_data_set(
            user_id=user_id, scope=scope, tag=tag, data=body.validated_data["data"], partial=body.validated_data["partial"]
        )
        return ok(data=data)

    @extend_schema(
        operation_id="chat_widget_data_delete",
        parameters=[_SCOPE, _TAG, UserIdQuerySerializer],
        request=None,
        responses=inline_serializer("WidgetDataDeleteResponse", {"success": serializers.BooleanField()}),
    )
    def destroy(self, request: Request, scope: str, tag: str) -> Response:
        widgets.check_tag_reference(scope, tag)
        user_id = acting_user_id(request, request.query_params.get("userId"))
        widgets.widget_data_delete(user_id=user_id, scope=scope, tag=tag)
        return ok()


class WebComponentViewSet(ApiViewSet):
    """`GET /api/chat/webcomponent/{scope}/{tag}`: the script of a store-located web component."""

    @extend_schema(
        operation_id="chat_webcomponent_script",
        parameters=[_SCOPE, _TAG],
        responses={(200, "text/javascript"): OpenApiTypes.STR, (304, "text/javascript"): None},
        description=(
            "The script of a `web-component` tag whose location is the store (`storeBucket`/`storeKey`), decoded per its "
            "`encoding`. `ETag` and `If-None-Match` (304); 404 for an unknown tag, one without a store location, or an "
            "absent object; 502 when the stored bytes do not decode."
        ),
    )
    def script(self, request: Request, scope: str, tag: str) -> HttpResponse:
        widgets.check_tag_reference(scope, tag)
        script = widgets.web_component_script(scope=scope, tag=tag)
        # A short lifetime, then a revalidation by ETag: an operator's new script shows within a minute.
        headers = {"ETag": script.etag, "Cache-Control": "private, max-age=60"}
        if script.etag in (value.strip() for value in request.headers.get("If-None-Match", "").split(",")):
            return HttpResponse(status=304, headers=headers)
        return HttpResponse(script.source, content_type="text/javascript; charset=utf-8", headers=headers)


# --- Converse (SPEC.md "Send message", CONTRACT §7) ------------------------------------------------


class ConverseView(ApiView):
    """What the OpenAPI schema says of `POST /api/chat/converse`. The path is served by
    `chat.endpoint` in front of Django (chatplatform.asgi), never routed here."""

    @extend_schema(
        operation_id="chat_converse",
        request=ConverseRequestSerializer,
        responses={
            (200, "application/json"): ConverseResponseSerializer,
            (200, "text/event-stream"): OpenApiTypes.STR,
        },
        description=(
            "Send a message to an agent. With `Accept: text/event-stream` the answer streams as Server-Sent Events "
            "`session`, `delta`, `trace` (traces feature), `done` (these response fields), `title` (new sessions), `error`; "
            "the WebSocket `/ws/chat/converse` takes the same body and sends the same events as JSON frames."
        ),
    )
    def post(self, request: Request) -> Response:
        raise AssertionError("POST /api/chat/converse is served by chat.endpoint")


def document_converse(endpoints: list[tuple[str, str, str, Any]], **kwargs: Any) -> list[tuple[str, str, str, Any]]:
    """drf-spectacular preprocessing hook: the converse path in the schema (it has no Django route)."""
    return [*endpoints, ("/api/chat/converse", r"^api/chat/converse$", "POST", ConverseView.as_view())]
