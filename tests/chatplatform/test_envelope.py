"""Every response under /api/ is the envelope, errors included (docs/api.md, "Envelope")."""

from __future__ import annotations

import pytest

from tests.conftest import assert_error


def test_success_is_wrapped_in_the_envelope(user_client):
    body = user_client.get("/api/chat/user").json()
    assert body["success"] is True
    assert body["user"]["userId"] == "alice"


def test_body_that_is_not_json_is_a_400(user_client):
    response = user_client.post("/api/chat/user/prefs", data="{not json", content_type="application/json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="JSON parse error")


def test_form_encoded_body_is_refused_as_unsupported(user_client):
    response = user_client.post("/api/chat/user/prefs", data="prefs=1", content_type="application/x-www-form-urlencoded")
    assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")


def test_validation_failure_names_the_field_and_rule(user_client):
    response = user_client.post("/api/chat/user/prefs", {"prefs": ["not", "an", "object"]}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="prefs: must be a JSON object")


def test_missing_credentials_is_a_401(anon_client):
    response = anon_client.get("/api/chat/user")
    assert_error(response, 401, "AUTHENTICATION_REQUIRED")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_non_admin_on_admin_endpoint_is_a_403(user_client):
    response = user_client.post("/api/chat-admin/users/search", {}, format="json")
    assert_error(response, 403, "INSUFFICIENT_PERMISSIONS")


@pytest.mark.parametrize("path", ["/api/chat/nothing-here", "/api/chat-admin/nothing/here", "/api/unknown", "/api"])
@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_unknown_path_is_a_404_in_the_envelope(user_client, path, method):
    response = getattr(user_client, method)(path)
    assert_error(response, 404, "NOT_FOUND")


def test_unknown_path_still_carries_rate_limit_headers(user_client):
    response = user_client.get("/api/chat/nothing-here")
    assert response["X-RateLimit-Limit"] == "100"


def test_wrong_method_is_a_405_in_the_envelope(user_client):
    response = user_client.delete("/api/chat/user")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")


def test_unexpected_failure_is_a_500_without_details(admin_client, monkeypatch):

    def explode(**kwargs):
        raise RuntimeError("db password is hunter2")

    monkeypatch.setattr("chat.users.views.users_search", explode)
    response = admin_client.post("/api/chat-admin/users/search", {}, format="json")
    body = assert_error(response, 500, "INTERNAL_ERROR")
    assert "hunter2" not in response.content.decode()
    assert "Traceback" not in response.content.decode()
    assert body["error"] == "internal error"


def test_readiness_checks_the_database_and_the_cache(anon_client, db):
    response = anon_client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "cache": "ok", "accepting": "ok"}}
