"""The OpenAPI document at /api/schema/ and Swagger UI at /api/docs/."""

from __future__ import annotations

import re

from django.urls import get_resolver
from django.urls.resolvers import URLPattern, URLResolver


def api_paths() -> set[str]:
    """Every literal endpoint path under /api/chat/ and /api/chat-admin/ in the URL map."""
    found: set[str] = set()

    def walk(patterns, prefix):
        for pattern in patterns:
            route = str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + route)
            elif isinstance(pattern, URLPattern) and (prefix + route).startswith(("api/chat/", "api/chat-admin/")):
                found.add("/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", prefix + route))

    walk(get_resolver().url_patterns, "")
    return found


def test_schema_documents_every_endpoint_auth_and_errors(anon_client, db):
    response = anon_client.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert api_paths() <= set(schema["paths"])
    assert set(schema["components"]["securitySchemes"]) == {"bearerAuth", "cookieAuth"}
    assert schema["components"]["securitySchemes"]["cookieAuth"]["name"] == "session"
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            assert {"400", "401", "403", "404", "429", "500"} <= set(operation["responses"]), f"{method} {path}"
    assert schema["components"]["schemas"]["ErrorEnvelope"]["required"] == ["success", "error"]


def test_schema_documents_json_bodies_only(anon_client, db):
    """JSON everywhere, but a knowledge base document may also come as a multipart file (CONTRACT §11)."""
    schema = anon_client.get("/api/schema/?format=json").json()
    upload = "/api/chat-admin/knowledge-base/{knowledgeBaseId}/documents"
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if "requestBody" in operation:
                expected = {"application/json", "multipart/form-data"} if (path, method) == (upload, "post") else {"application/json"}
                assert set(operation["requestBody"]["content"]) == expected, f"{method} {path}"


def test_swagger_ui_is_served_from_local_assets(anon_client, db):
    response = anon_client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower()
