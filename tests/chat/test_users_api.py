"""`/api/chat/user`, `/api/chat/user/prefs` and the admin user search (docs/api.md, "Users")."""

from __future__ import annotations

from chat.users.models import ChatUser
from tests.conftest import assert_error


def test_get_user_returns_the_callers_record(user_client):
    body = user_client.get("/api/chat/user?userId=alice").json()
    assert body["success"] is True
    assert set(body["user"]) == {"userId", "email", "firstName", "lastName", "userType", "customData", "roles", "createDate", "lastUpdate"}


def test_admin_gets_or_creates_another_user(admin_client):
    body = admin_client.get("/api/chat/user?userId=newcomer").json()
    assert body["user"]["userId"] == "newcomer"
    assert ChatUser.objects.filter(user_id="newcomer").exists()


def test_prefs_start_empty(user_client):
    assert user_client.get("/api/chat/user/prefs").json() == {"success": True, "userId": "alice", "prefs": {}}


def test_prefs_without_partial_are_replaced(user_client):
    user_client.post("/api/chat/user/prefs", {"userId": "alice", "prefs": {"theme": "dark", "lang": "en"}}, format="json")
    body = user_client.post("/api/chat/user/prefs", {"userId": "alice", "prefs": {"lang": "fr"}}, format="json").json()
    assert body == {"success": True, "prefs": {"lang": "fr"}}
    assert user_client.get("/api/chat/user/prefs").json()["prefs"] == {"lang": "fr"}


def test_partial_prefs_merge_and_null_removes_a_key(user_client):
    user_client.post("/api/chat/user/prefs", {"prefs": {"theme": "dark", "lang": "en"}}, format="json")
    body = user_client.post("/api/chat/user/prefs", {"prefs": {"lang": None, "size": 14}, "partial": True}, format="json").json()
    assert body["prefs"] == {"theme": "dark", "size": 14}


def test_prefs_must_be_a_json_object(user_client):
    for bad in ([1], "dark", 3, None):
        response = user_client.post("/api/chat/user/prefs", {"prefs": bad}, format="json")
        assert_error(response, 400, "INVALID_REQUEST", mentions="prefs")


def test_prefs_are_required(user_client):
    assert_error(user_client.post("/api/chat/user/prefs", {}, format="json"), 400, mentions="prefs: This field is required")


def test_user_search_matches_a_case_insensitive_prefix(admin_client):
    ChatUser.objects.bulk_create([ChatUser(user_id=uid, password="!") for uid in ["Alpha-1", "alpha-2", "beta", "xalpha"]])
    users = admin_client.post("/api/chat-admin/users/search", {"userIdPartial": "ALP"}, format="json").json()["users"]
    assert [u["userId"] for u in users] == ["Alpha-1", "alpha-2"]
    assert set(users[0]) == {"userId", "email", "firstName", "lastName", "userType"}


def test_user_search_limit_defaults_to_20_and_stops_at_100(admin_client):
    ChatUser.objects.bulk_create([ChatUser(user_id=f"u{i:03}", password="!") for i in range(30)])
    assert len(admin_client.post("/api/chat-admin/users/search", {"userIdPartial": "u"}, format="json").json()["users"]) == 20
    assert len(admin_client.post("/api/chat-admin/users/search", {"userIdPartial": "u", "limit": 25}, format="json").json()["users"]) == 25
    assert_error(admin_client.post("/api/chat-admin/users/search", {"limit": 101}, format="json"), 400, mentions="limit")
    assert_error(admin_client.post("/api/chat-admin/users/search", {"limit": 0}, format="json"), 400, mentions="limit")


def test_a_cached_user_entry_of_another_release_is_ignored(user_client):
    from django.core.cache import cache

    assert user_client.get("/api/chat/user").status_code == 200
    cache.set("chatuser:alice", {"user_id": "alice", "a_field_this_release_lacks": 1})
    body = user_client.get("/api/chat/user").json()
    assert body["user"]["userId"] == "alice"
    cache.set("chatuser:alice", "not even a dict")
    assert user_client.get("/api/chat/user").status_code == 200


def test_an_admin_change_reaches_the_next_request_at_once(user_client):
    assert user_client.get("/api/chat/user").status_code == 200  # now cached
    user = ChatUser.objects.get(pk="alice")
    user.is_active = False
    user.save()
    assert_error(user_client.get("/api/chat/user"), 401)
