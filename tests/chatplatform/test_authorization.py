"""The authorization matrix of every endpoint (docs/api.md, "Who may read what"): anonymous 401, another user's
userId 403, admin allowed; Admin API endpoints 403 for non-admins."""

from __future__ import annotations

import pytest

from tests.conftest import assert_error

# (method, path, body) of Chat API endpoints that take a userId.
CHAT_ENDPOINTS = [
    ("get", "/api/chat/user?userId={uid}", None),
    ("get", "/api/chat/user/prefs?userId={uid}", None),
    ("post", "/api/chat/user/prefs", {"userId": "{uid}", "prefs": {}}),
]
ADMIN_ENDPOINTS = [
    ("post", "/api/chat-admin/users/search", {}),
]


def call(client, method, path, body, uid):
    path = path.format(uid=uid)
    if body is None:
        return getattr(client, method)(path)
    body = {k: (v.format(uid=uid) if isinstance(v, str) else v) for k, v in body.items()}
    return getattr(client, method)(path, body, format="json")


@pytest.mark.parametrize(("method", "path", "body"), CHAT_ENDPOINTS + ADMIN_ENDPOINTS)
def test_anonymous_caller_gets_401(anon_client, db, method, path, body):
    assert_error(call(anon_client, method, path, body, "alice"), 401)


@pytest.mark.parametrize(("method", "path", "body"), CHAT_ENDPOINTS)
def test_another_users_id_is_403(user_client, method, path, body):
    assert_error(call(user_client, method, path, body, "bob"), 403, "INSUFFICIENT_PERMISSIONS")


@pytest.mark.parametrize(("method", "path", "body"), CHAT_ENDPOINTS)
def test_own_id_is_allowed(user_client, method, path, body):
    assert call(user_client, method, path, body, "alice").status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), CHAT_ENDPOINTS + ADMIN_ENDPOINTS)
def test_admin_may_act_for_another_user(admin_client, method, path, body):
    assert call(admin_client, method, path, body, "bob").status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ENDPOINTS)
def test_non_admin_gets_403_on_admin_endpoints(user_client, method, path, body):
    assert_error(call(user_client, method, path, body, "alice"), 403, "INSUFFICIENT_PERMISSIONS")


def test_staff_flag_alone_makes_an_admin(client_for, db):
    from chat.users.models import ChatUser

    ChatUser.objects.create_user("staffer", is_staff=True)
    assert client_for("staffer").post("/api/chat-admin/users/search", {}, format="json").status_code == 200


def test_a_user_id_with_a_null_character_is_a_400_as_in_a_body(admin_client):
    response = admin_client.get("/api/chat/user?userId=bob%00")
    assert_error(response, 400, "INVALID_REQUEST", mentions="userId: Null characters are not allowed.")
