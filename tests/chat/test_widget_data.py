"""Widget data (docs/api.md, "Widgets"): `GET`/`POST`/`DELETE /api/chat/widget-data/<scope>/<tag>`,
a JSON object per user and tag, with the userId rule of the Chat API and a 400 KB limit."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from chat.users.models import ChatUser
from chat.widgets.models import WidgetData
from tests.chat.test_pages import config_of
from tests.conftest import assert_error
from tests.factories import ChatAppFactory

pytestmark = pytest.mark.django_db

PATH = "/api/chat/widget-data/demo/counter"


def test_nothing_stored_reads_as_null(user_client):
    response = user_client.get(PATH)
    assert response.status_code == 200
    assert response.json() == {"success": True, "data": None}


def test_set_then_get_returns_the_object(user_client):
    response = user_client.post(PATH, {"data": {"count": 3, "items": ["a", "b"]}}, format="json")
    assert response.json() == {"success": True, "data": {"count": 3, "items": ["a", "b"]}}
    assert user_client.get(PATH).json()["data"] == {"count": 3, "items": ["a", "b"]}
    assert user_client.get(PATH + "?userId=alice").json()["data"] == {"count": 3, "items": ["a", "b"]}


def test_partial_merges_top_level_keys_and_null_removes_one(user_client):
    user_client.post(PATH, {"data": {"count": 3, "theme": "dark", "nested": {"a": 1}}}, format="json")
    response = user_client.post(PATH, {"data": {"count": 4, "theme": None, "nested": {"b": 2}}, "partial": True}, format="json")
    assert response.json()["data"] == {"count": 4, "nested": {"b": 2}}  # top level only: `nested` is replaced
    assert user_client.get(PATH).json()["data"] == {"count": 4, "nested": {"b": 2}}


def test_partial_on_nothing_stored_stores_the_object(user_client):
    response = user_client.post(PATH, {"data": {"count": 1}, "partial": True}, format="json")
    assert response.json()["data"] == {"count": 1}


def test_without_partial_the_object_is_replaced(user_client):
    user_client.post(PATH, {"data": {"count": 3, "theme": "dark"}}, format="json")
    response = user_client.post(PATH, {"data": {"count": 9}}, format="json")
    assert response.json()["data"] == {"count": 9}
    assert user_client.get(PATH).json()["data"] == {"count": 9}


def test_delete_removes_it_and_is_quiet_when_nothing_is_stored(user_client):
    user_client.post(PATH, {"data": {"count": 3}}, format="json")
    assert user_client.delete(PATH).json() == {"success": True}
    assert user_client.get(PATH).json()["data"] is None
    assert user_client.delete(PATH).json() == {"success": True}


def test_data_is_per_user_and_per_tag(client_for):
    alice, bob = client_for("alice"), client_for("bob")
    alice.post(PATH, {"data": {"who": "alice"}}, format="json")
    bob.post(PATH, {"data": {"who": "bob"}}, format="json")
    alice.post("/api/chat/widget-data/demo/other", {"data": {"who": "alice-other"}}, format="json")
    assert alice.get(PATH).json()["data"] == {"who": "alice"}
    assert bob.get(PATH).json()["data"] == {"who": "bob"}
    assert alice.get("/api/chat/widget-data/demo/other").json()["data"] == {"who": "alice-other"}


def test_over_400_kb_is_400_naming_data_and_nothing_is_written(user_client):
    user_client.post(PATH, {"data": {"keep": "me"}}, format="json")
    too_big = {"blob": "x" * (400 * 1024)}
    assert_error(
        user_client.post(PATH, {"data": too_big}, format="json"), 400, "INVALID_REQUEST", mentions="data: must be at most 409600 bytes"
    )
    # A merge is measured after merging: two halves that fit alone do not fit together.
    half = {"a": "x" * (210 * 1024)}
    assert user_client.post("/api/chat/widget-data/demo/halves", {"data": half}, format="json").status_code == 200
    response = user_client.post("/api/chat/widget-data/demo/halves", {"data": {"b": "y" * (210 * 1024)}, "partial": True}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="data:")
    assert user_client.get(PATH).json()["data"] == {"keep": "me"}
    assert user_client.get("/api/chat/widget-data/demo/halves").json()["data"] == half
    assert not WidgetData.objects.filter(tag="counter", data__has_key="blob").exists()


def test_a_new_object_over_the_limit_leaves_no_row(user_client):
    assert_error(user_client.post(PATH, {"data": {"blob": "x" * (401 * 1024)}}, format="json"), 400, "INVALID_REQUEST")
    assert WidgetData.objects.count() == 0


def test_exactly_400_kb_is_accepted(user_client):
    padding = 400 * 1024 - len('{"blob":""}')
    response = user_client.post(PATH, {"data": {"blob": "x" * padding}}, format="json")
    assert response.status_code == 200, response.json()
    assert WidgetData.objects.get().size == 400 * 1024


def test_another_users_data_is_refused_to_a_non_admin_and_allowed_to_an_admin(client_for):
    client_for("bob").post(PATH, {"data": {"secret": 1}}, format="json")
    alice = client_for("alice")
    assert_error(alice.get(PATH + "?userId=bob"), 403, "INSUFFICIENT_PERMISSIONS")
    assert_error(alice.post(PATH, {"userId": "bob", "data": {"x": 1}}, format="json"), 403, "INSUFFICIENT_PERMISSIONS")
    assert_error(alice.delete(PATH + "?userId=bob"), 403, "INSUFFICIENT_PERMISSIONS")
    admin = client_for("ops", admin=True)
    assert admin.get(PATH + "?userId=bob").json()["data"] == {"secret": 1}
    assert admin.post(PATH, {"userId": "carol", "data": {"y": 2}}, format="json").json()["data"] == {"y": 2}
    assert WidgetData.objects.get(user_id="carol").data == {"y": 2}  # the user is created as for prefs


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/chat/widget-data/demo/has%20space", "tag"),
        ("/api/chat/widget-data/de.mo/counter", "scope"),
        ("/api/chat/widget-data/demo/" + "t" * 101, "tag"),
    ],
)
def test_scope_and_tag_follow_the_tag_name_rule(user_client, path, field):
    assert_error(user_client.get(path), 400, "INVALID_REQUEST", mentions=f"{field}: must contain only letters")
    assert_error(user_client.post(path, {"data": {}}, format="json"), 400, "INVALID_REQUEST", mentions=f"{field}:")


def test_a_tag_without_a_definition_keeps_data_too(user_client):
    response = user_client.post("/api/chat/widget-data/runtime/registered-later", {"data": {"ok": True}}, format="json")
    assert response.json()["data"] == {"ok": True}


@pytest.mark.parametrize(
    ("body", "mentions"),
    [
        ({}, "data: This field is required"),
        ({"data": [1, 2]}, "data: must be a JSON object"),
        ({"data": "text"}, "data: must be a JSON object"),
        ({"data": None}, "data:"),
        ({"data": {}, "partial": "sometimes"}, "partial:"),
    ],
)
def test_a_body_that_breaks_a_rule_is_400_naming_the_field(user_client, body, mentions):
    assert_error(user_client.post(PATH, body, format="json"), 400, "INVALID_REQUEST", mentions=mentions)
    assert WidgetData.objects.count() == 0


def test_the_page_cookie_works_with_the_pages_csrf_token():
    ChatAppFactory(chat_app_id="support")
    client = Client(enforce_csrf_checks=True)
    client.force_login(ChatUser.objects.create_user("alice", "correct horse battery"))
    assert client.get(PATH).json() == {"success": True, "data": None}
    assert_error(client.post(PATH, {"data": {"a": 1}}, content_type="application/json"), 403, mentions="CSRF")
    token = config_of(client.get("/chat/support/"))["csrfToken"]
    response = client.post(PATH, {"data": {"a": 1}}, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert response.json() == {"success": True, "data": {"a": 1}}


def test_anonymous_is_401(anon_client):
    assert_error(anon_client.get(PATH), 401)


def test_the_django_admin_lists_widget_data_and_stored_objects_read_only(user_client, tmp_path):
    user_client.post(PATH, {"data": {"count": 7}}, format="json")
    (tmp_path / "w.js").write_text("// w\n")
    call_command("store_put", "widgets", "w.js", str(tmp_path / "w.js"), stdout=io.StringIO())
    operator = Client()
    operator.force_login(ChatUser.objects.create_superuser("ops", "correct horse battery"))
    listing = operator.get("/admin/chat/widgetdata/")
    assert listing.status_code == 200 and "demo" in listing.content.decode() and "counter" in listing.content.decode()
    row = WidgetData.objects.get()
    detail = operator.get(f"/admin/chat/widgetdata/{row.pk}/change/")
    assert detail.status_code == 200 and "count" in detail.content.decode()
    assert operator.get("/admin/chat/widgetdata/add/").status_code == 403
    stored = operator.get("/admin/chatplatform/storedobject/")
    assert stored.status_code == 200 and "widgets/w.js" in stored.content.decode()
