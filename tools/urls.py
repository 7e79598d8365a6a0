"""The paths of docs/api.md "Tools", written out literally."""

from django.urls import path

from tools.views import ToolAdminViewSet

chat_urlpatterns: list = []

admin_urlpatterns = [
    path("tool", ToolAdminViewSet.as_view({"post": "upsert"}), name="admin-tool"),
    path("tool/<str:tool_id>", ToolAdminViewSet.as_view({"get": "retrieve", "delete": "destroy"}), name="admin-tool-detail"),
    path("tools/search", ToolAdminViewSet.as_view({"post": "search"}), name="admin-tools-search"),
]
