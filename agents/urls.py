"""The paths of docs/api.md "Agents" (relative to /api/chat-admin/), written out literally."""

from django.urls import path

from agents.views import AgentAdminViewSet

chat_urlpatterns: list = []

admin_urlpatterns = [
    path("agent", AgentAdminViewSet.as_view({"post": "upsert"}), name="admin-agent"),
    path("agent/<str:agentId>", AgentAdminViewSet.as_view({"get": "retrieve", "delete": "destroy"}), name="admin-agent-detail"),
    path("agent/<str:agentId>/versions", AgentAdminViewSet.as_view({"get": "versions"}), name="admin-agent-versions"),
    path(
        "agent/<str:agentId>/versions/<int:version>",
        AgentAdminViewSet.as_view({"get": "version"}),
        name="admin-agent-version",
    ),
    path("agent/<str:agentId>/rollback", AgentAdminViewSet.as_view({"post": "rollback"}), name="admin-agent-rollback"),
    path("agents/search", AgentAdminViewSet.as_view({"post": "search"}), name="admin-agents-search"),
]
