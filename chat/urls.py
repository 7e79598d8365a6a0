"""SPEC.md / CONTRACT §5 paths of chat records, written out literally."""

from django.urls import path

from chat.views import UserAdminViewSet, UserViewSet

chat_urlpatterns = [
    path("user", UserViewSet.as_view({"get": "retrieve"}), name="chat-user"),
    path("user/prefs", UserViewSet.as_view({"get": "prefs", "post": "update_prefs"}), name="chat-user-prefs"),
]

admin_urlpatterns = [
    path("users/search", UserAdminViewSet.as_view({"post": "search"}), name="admin-users-search"),
]
