"""SPEC.md / CONTRACT §5 paths of chat records, written out literally."""

from django.urls import path

from chat.views import ChatAppAdminViewSet, ChatAppViewSet, UserAdminViewSet, UserViewSet

chat_urlpatterns = [
    path("user", UserViewSet.as_view({"get": "retrieve"}), name="chat-user"),
    path("user/prefs", UserViewSet.as_view({"get": "prefs", "post": "update_prefs"}), name="chat-user-prefs"),
    path("chat-apps", ChatAppViewSet.as_view({"get": "list_for_user"}), name="chat-chat-apps"),
]

admin_urlpatterns = [
    path("users/search", UserAdminViewSet.as_view({"post": "search"}), name="admin-users-search"),
    path("chat-app", ChatAppAdminViewSet.as_view({"post": "upsert"}), name="admin-chat-app"),
    path(
        "chat-app/<str:chatAppId>",
        ChatAppAdminViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="admin-chat-app-detail",
    ),
    path("chat-apps/search", ChatAppAdminViewSet.as_view({"post": "search"}), name="admin-chat-apps-search"),
]
