"""The paths of docs/api.md "Semantic directives", written out literally."""

from django.urls import path

from directives.views import SemanticDirectiveAdminViewSet

chat_urlpatterns: list = []

admin_urlpatterns = [
    path(
        "semantic-directive",
        SemanticDirectiveAdminViewSet.as_view({"post": "upsert", "delete": "destroy"}),
        name="admin-semantic-directive",
    ),
    path("semantic-directive/search", SemanticDirectiveAdminViewSet.as_view({"post": "search"}), name="admin-semantic-directive-search"),
    path("semantic-directive/deploy", SemanticDirectiveAdminViewSet.as_view({"post": "deploy"}), name="admin-semantic-directive-deploy"),
]
