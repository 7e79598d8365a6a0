"""The paths of docs/api.md "Tag definitions", written out literally."""

from django.urls import path

from tags.views import TagDefinitionAdminViewSet, TagDefinitionChatViewSet

chat_urlpatterns = [
    path("tagdef/search", TagDefinitionChatViewSet.as_view({"post": "search"}), name="chat-tagdef-search"),
]

admin_urlpatterns = [
    path("tagdef", TagDefinitionAdminViewSet.as_view({"post": "upsert", "delete": "destroy"}), name="admin-tagdef"),
    path("tagdef/search", TagDefinitionAdminViewSet.as_view({"post": "search"}), name="admin-tagdef-search"),
    path("tagdef/clear-cache", TagDefinitionAdminViewSet.as_view({"post": "clear_cache"}), name="admin-tagdef-clear-cache"),
    path("tagdef/deploy", TagDefinitionAdminViewSet.as_view({"post": "deploy"}), name="admin-tagdef-deploy"),
]
