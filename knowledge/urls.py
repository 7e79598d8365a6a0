"""The paths of docs/api.md "Knowledge bases" (relative to /api/chat-admin/), written out literally."""

from django.urls import path

from knowledge.views import DocumentAdminViewSet, KnowledgeBaseAdminViewSet

chat_urlpatterns: list = []

admin_urlpatterns = [
    path("knowledge-base", KnowledgeBaseAdminViewSet.as_view({"post": "upsert"}), name="admin-knowledge-base"),
    path(
        "knowledge-base/<str:knowledgeBaseId>",
        KnowledgeBaseAdminViewSet.as_view({"get": "retrieve", "delete": "destroy"}),
        name="admin-knowledge-base-detail",
    ),
    path(
        "knowledge-base/<str:knowledgeBaseId>/documents",
        DocumentAdminViewSet.as_view({"get": "list", "post": "upload"}),
        name="admin-knowledge-base-documents",
    ),
    path(
        "knowledge-base/<str:knowledgeBaseId>/documents/<str:documentId>",
        DocumentAdminViewSet.as_view({"delete": "destroy"}),
        name="admin-knowledge-base-document",
    ),
    path(
        "knowledge-base/<str:knowledgeBaseId>/query",
        KnowledgeBaseAdminViewSet.as_view({"post": "query"}),
        name="admin-knowledge-base-query",
    ),
    path("knowledge-bases/search", KnowledgeBaseAdminViewSet.as_view({"post": "search"}), name="admin-knowledge-bases-search"),
]
