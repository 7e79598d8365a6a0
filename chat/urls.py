"""The paths of the Chat and Admin APIs' chat records (docs/api.md), written out literally."""

from django.urls import path, re_path

from chat.chat_apps.views import ChatAppAdminViewSet, ChatAppViewSet
from chat.config.views import ConfigAdminViewSet
from chat.doors.converse import ConverseView, RegenerateView
from chat.doors.http import lazy_door
from chat.doors.openai import ChatCompletionsView, ModelsView, UnknownPathView
from chat.doors.responses import ResponsesView, ResponseView
from chat.doors.sessions import ApprovalDecisionView, ApprovalsView, SessionStopView, SessionStreamView
from chat.feedback.views import FeedbackAdminViewSet, FeedbackViewSet
from chat.files.views import FileViewSet
from chat.governance.views import ConversationViewSet, MyDataViewSet, UserDataAdminViewSet
from chat.insights.views import InsightsAdminViewSet
from chat.pages.views import SignInView, chat_page, home, shared_page, widget_renderer
from chat.search.views import SessionSearchViewSet
from chat.sessions.views import SessionAdminViewSet, SessionViewSet
from chat.shares.views import SessionShareViewSet, SharedViewSet
from chat.users.views import AuthSessionView, UserAdminViewSet, UserViewSet
from chat.widgets.views import WebComponentViewSet, WidgetDataViewSet

chat_urlpatterns = [
    path("user", UserViewSet.as_view({"get": "retrieve"}), name="chat-user"),
    path("user/prefs", UserViewSet.as_view({"get": "prefs", "post": "update_prefs"}), name="chat-user-prefs"),
    # a person's data (docs/api.md, "Your data")
    path("user/export", MyDataViewSet.as_view({"get": "export"}), name="chat-user-export"),
    path("user/usage", MyDataViewSet.as_view({"get": "usage"}), name="chat-user-usage"),
    path("chat-apps", ChatAppViewSet.as_view({"get": "list_for_user"}), name="chat-chat-apps"),
    path("converse", ConverseView.as_view(), name="chat-converse"),
    path("sessions", SessionViewSet.as_view({"get": "list"}), name="chat-sessions"),
    # before sessions/<str:sessionId>, which would take "search" for a session's id
    path("sessions/search", SessionViewSet.as_view({"get": "search"}), name="chat-sessions-search"),
    path("sessions/<str:sessionId>/messages", SessionViewSet.as_view({"get": "messages"}), name="chat-session-messages"),
    path("sessions/<str:sessionId>/messages/<str:messageId>/regenerate", RegenerateView.as_view(), name="chat-message-regenerate"),
    path("sessions/<str:sessionId>/title", SessionViewSet.as_view({"post": "title"}), name="chat-session-title"),
    path("sessions/<str:sessionId>/pin", SessionViewSet.as_view({"post": "pin", "delete": "unpin"}), name="chat-session-pin"),
    path(
        "sessions/<str:sessionId>/share",
        SessionShareViewSet.as_view({"post": "share", "delete": "revoke"}),
        name="chat-session-share",
    ),
    path("shared/<str:shareId>", SharedViewSet.as_view({"get": "retrieve"}), name="chat-shared"),
    path("sessions/<str:sessionId>/stream", SessionStreamView.as_view(), name="chat-session-stream"),
    path("sessions/<str:sessionId>/stop", SessionStopView.as_view(), name="chat-session-stop"),
    path("sessions/<str:sessionId>/approvals", ApprovalsView.as_view(), name="chat-session-approvals"),
    path("sessions/<str:sessionId>/approvals/<str:approvalId>", ApprovalDecisionView.as_view(), name="chat-session-approval"),
    path("sessions/<str:sessionId>/feedback", FeedbackViewSet.as_view({"get": "for_session"}), name="chat-session-feedback"),
    path("feedback", FeedbackViewSet.as_view({"post": "create"}), name="chat-feedback"),
    # the token-to-cookie exchange (docs/api.md, "Authentication") and the files attached to messages
    path("auth/session", AuthSessionView.as_view(), name="chat-auth-session"),
    path("files", FileViewSet.as_view({"post": "upload"}), name="chat-files"),
    path("files/<str:fileId>", FileViewSet.as_view({"get": "retrieve"}), name="chat-file"),
    path("files/<str:fileId>/content", FileViewSet.as_view({"get": "content"}), name="chat-file-content"),
    # the widget runtime's server side (docs/api.md, "Widgets")
    path(
        "widget-data/<str:scope>/<str:tag>",
        WidgetDataViewSet.as_view({"get": "retrieve", "post": "upsert", "delete": "destroy"}),
        name="chat-widget-data",
    ),
    path("webcomponent/<str:scope>/<str:tag>", WebComponentViewSet.as_view({"get": "script"}), name="chat-webcomponent"),
    path("sessions/<str:sessionId>", ConversationViewSet.as_view({"delete": "destroy"}), name="chat-session"),
]

# The protocol doors (docs/doors.md), at the root: OpenAI's SDKs take `<site>/v1` as their base URL.
door_urlpatterns = [
    path("v1/chat/completions", ChatCompletionsView.as_view(), name="door-chat-completions"),
    path("v1/models", ModelsView.as_view(), name="door-models"),
    path("v1/models/<str:modelId>", ModelsView.as_view(), name="door-model"),
    path("v1/responses", ResponsesView.as_view(), name="door-responses"),
    path("v1/responses/<str:responseId>", ResponseView.as_view(), name="door-response"),
    re_path(r"^v1(?:/.*)?$", UnknownPathView.as_view()),
    # the SDK doors, imported at their first request (chat.doors.http.lazy_door)
    path("a2a/<str:chatAppId>", lazy_door("chat.doors.a2a.A2AView"), name="door-a2a"),
    path("a2a/<str:chatAppId>/.well-known/agent-card.json", lazy_door("chat.doors.a2a.AgentCardView"), name="door-a2a-card"),
    path("mcp", lazy_door("chat.doors.mcp.McpView"), name="door-mcp"),
    path("api/ag-ui/<str:chatAppId>", lazy_door("chat.doors.agui.AgUiView"), name="door-ag-ui"),
]

admin_urlpatterns = [
    path("users/search", UserAdminViewSet.as_view({"post": "search"}), name="admin-users-search"),
    path("users/<str:userId>", UserDataAdminViewSet.as_view({"delete": "erase"}), name="admin-user"),
    path("users/<str:userId>/export", UserDataAdminViewSet.as_view({"get": "export"}), name="admin-user-export"),
    path("chat-app", ChatAppAdminViewSet.as_view({"post": "upsert"}), name="admin-chat-app"),
    path(
        "chat-app/<str:chatAppId>",
        ChatAppAdminViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="admin-chat-app-detail",
    ),
    path("chat-apps/search", ChatAppAdminViewSet.as_view({"post": "search"}), name="admin-chat-apps-search"),
    path("feedback", FeedbackAdminViewSet.as_view({"post": "command"}), name="admin-feedback"),
    # configuration as code (docs/api.md, "Configuration as code")
    path("config", ConfigAdminViewSet.as_view({"get": "export"}), name="admin-config"),
    path("config/apply", ConfigAdminViewSet.as_view({"post": "apply"}), name="admin-config-apply"),
    path("sessions/<str:sessionId>/messages", SessionAdminViewSet.as_view({"get": "messages"}), name="admin-session-messages"),
    path("sessions/search", SessionSearchViewSet.as_view({"post": "search"}), name="admin-sessions-search"),
    path(
        "sessions/<str:sessionId>/insights",
        InsightsAdminViewSet.as_view({"get": "retrieve", "post": "regenerate"}),
        name="admin-session-insights",
    ),
]

# The browser's pages (README.md, "The chat page"), served at the root of the site.
page_urlpatterns = [
    path("", home, name="home"),
    path("accounts/login/", SignInView.as_view(), name="login"),
    path("chat/<str:chat_app_id>/", chat_page, name="chat-page"),
    path("chat/<str:chat_app_id>/<str:session_id>", chat_page, name="chat-session-page"),
    path("widgets/renderers/<str:name>", widget_renderer, name="widget-renderer"),
    path("shared/<str:share_id>", shared_page, name="shared-page"),
]
