"""Admin API of chat apps (docs/api.md, "Chat apps"): create or update, get, delete, search, validation."""

from __future__ import annotations

import pytest

from agents.models import AgentDefinition
from chat.chat_apps.models import ChatApp
from tests.conftest import assert_error
from tests.factories import AgentFactory, ChatAppFactory

VALID = {"chatAppId": "support", "title": "Support", "agentId": "helper"}


def post_app(client, chat_app):
    return client.post("/api/chat-admin/chat-app", {"chatApp": chat_app, "userId": "bob"}, format="json")


@pytest.fixture
def agents(db):
    AgentFactory(agent_id="helper")
    AgentFactory(agent_id="other")


def test_create_fills_the_defaults(admin_client, agents):
    response = post_app(admin_client, VALID)
    assert response.status_code == 200, response.json()
    app = response.json()["chatApp"]
    assert response.json()["success"] is True
    assert app == {
        **VALID,
        "description": "",
        "enabled": True,
        "userTypes": [],
        "userRoles": [],
        "applyRulesAs": "and",
        "modesSupported": [],
        "features": {},
        "dontCacheThis": False,
        "testType": None,
        "retentionDays": None,
        "createDate": app["createDate"],
        "lastUpdate": app["lastUpdate"],
    }
    assert app["createDate"] and app["lastUpdate"]


def test_create_stores_every_field(admin_client, agents):
    chat_app = {
        **VALID,
        "description": "Help desk",
        "enabled": False,
        "userTypes": ["internal-user"],
        "userRoles": ["support"],
        "applyRulesAs": "or",
        "modesSupported": ["standalone", "embedded"],
        "features": {"tags": {"enabled": True, "tagsEnabled": [{"scope": "acme", "tag": "chart"}]}, "traces": {"enabled": True}},
        "dontCacheThis": True,
        "testType": "mock",
    }
    stored = post_app(admin_client, chat_app).json()["chatApp"]
    assert {name: stored[name] for name in chat_app} == chat_app


def test_update_changes_only_the_given_fields(admin_client, agents):
    post_app(admin_client, {**VALID, "description": "Help desk", "userRoles": ["support"]})
    response = post_app(admin_client, {"chatAppId": "support", "title": "Support desk", "agentId": "other"})
    app = response.json()["chatApp"]
    assert response.status_code == 200
    assert (app["title"], app["agentId"], app["description"], app["userRoles"]) == ("Support desk", "other", "Help desk", ["support"])
    assert admin_client.get("/api/chat-admin/chat-app/support").json()["chatApp"] == app


def test_update_that_changes_nothing_keeps_last_update(admin_client, agents):
    first = post_app(admin_client, VALID).json()["chatApp"]
    again = post_app(admin_client, {"chatAppId": "support", "title": "Support"}).json()["chatApp"]
    assert again["lastUpdate"] == first["lastUpdate"]


def test_get_delete_and_404(admin_client, agents):
    post_app(admin_client, VALID)
    assert admin_client.get("/api/chat-admin/chat-app/support").json()["chatApp"]["chatAppId"] == "support"
    response = admin_client.delete("/api/chat-admin/chat-app/support")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert_error(admin_client.get("/api/chat-admin/chat-app/support"), 404, "INVALID_CHAT_APP_ID", mentions="support")
    assert_error(admin_client.delete("/api/chat-admin/chat-app/support"), 404, "INVALID_CHAT_APP_ID")


def test_search_by_ids_and_all(admin_client, db):
    ChatAppFactory(chat_app_id="b")
    ChatAppFactory(chat_app_id="a")
    ChatAppFactory(chat_app_id="c")
    named = admin_client.post("/api/chat-admin/chat-apps/search", {"chatAppIds": ["c", "a", "zz"], "userId": "x"}, format="json")
    assert named.status_code == 200
    assert [app["chatAppId"] for app in named.json()["chatApps"]] == ["a", "c"]
    every = admin_client.post("/api/chat-admin/chat-apps/search", {}, format="json").json()["chatApps"]
    assert [app["chatAppId"] for app in every] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/chat-admin/chat-app", {"chatApp": VALID}),
        ("get", "/api/chat-admin/chat-app/support", None),
        ("delete", "/api/chat-admin/chat-app/support", None),
        ("post", "/api/chat-admin/chat-apps/search", {}),
    ],
)
def test_non_admin_is_refused_with_403(user_client, method, path, body):
    ChatAppFactory(chat_app_id="support", title="Support")
    response = getattr(user_client, method)(path, body, format="json")
    assert_error(response, 403, "INSUFFICIENT_PERMISSIONS")
    assert ChatApp.objects.get(pk="support").title == "Support"


def test_deleting_an_agent_used_by_chat_apps_is_refused_naming_them(admin_client, agents):
    post_app(admin_client, VALID)
    post_app(admin_client, {**VALID, "chatAppId": "sales"})
    response = admin_client.delete("/api/chat-admin/agent/helper")
    assert_error(response, 400, "INVALID_REQUEST", mentions="agentId: agent helper is used by chat apps sales, support")
    assert AgentDefinition.objects.filter(pk="helper").exists()
    admin_client.delete("/api/chat-admin/chat-app/support")
    admin_client.delete("/api/chat-admin/chat-app/sales")
    assert admin_client.delete("/api/chat-admin/agent/helper").status_code == 200


def without(key):
    return {name: value for name, value in VALID.items() if name != key}


REFUSED = [
    pytest.param(without("chatAppId"), "chatApp.chatAppId: is required", id="chatAppId missing"),
    pytest.param({**VALID, "chatAppId": "a/b"}, "chatApp.chatAppId: must be 1 to 128 letters", id="chatAppId pattern"),
    pytest.param({**VALID, "chatAppId": "x" * 129}, "chatApp.chatAppId: must be at most 128 characters", id="chatAppId too long"),
    pytest.param({**VALID, "chatAppId": ["x"]}, "chatApp.chatAppId: must be a string", id="chatAppId not a string"),
    pytest.param(without("title"), "chatApp.title: is required", id="title missing"),
    pytest.param({**VALID, "title": " "}, "chatApp.title: must not be blank", id="title blank"),
    pytest.param({**VALID, "title": 3}, "chatApp.title: must be a string", id="title type"),
    pytest.param(without("agentId"), "chatApp.agentId: is required", id="agentId missing"),
    pytest.param({**VALID, "userTypes": ["internal-user", "robot"]}, "chatApp.userTypes[1]: must be one of internal-user, external-user"),
    pytest.param({**VALID, "userTypes": "internal-user"}, "chatApp.userTypes: must be a list", id="userTypes not a list"),
    pytest.param({**VALID, "userTypes": ["internal-user", "internal-user"]}, "chatApp.userTypes: lists a value more than once", id="twice"),
    pytest.param({**VALID, "userRoles": ["ok", 1]}, "chatApp.userRoles: must be a list of non-empty strings", id="userRoles"),
    pytest.param({**VALID, "applyRulesAs": "xor"}, "chatApp.applyRulesAs: must be and or or", id="applyRulesAs"),
    pytest.param({**VALID, "modesSupported": ["floating"]}, "chatApp.modesSupported[0]: must be one of standalone, embedded", id="modes"),
    pytest.param({**VALID, "enabled": "yes please"}, "chatApp.enabled: must be a boolean", id="enabled"),
    pytest.param({**VALID, "testType": "prod"}, "chatApp.testType: must be mock", id="testType"),
    pytest.param({**VALID, "features": []}, "chatApp.features: must be an object", id="features not an object"),
    pytest.param({**VALID, "features": {"tagz": {}}}, "chatApp.features.tagz: is not a known feature", id="features unknown"),
    pytest.param(
        {**VALID, "features": {"tags": {"enabled": "yes"}}}, "chatApp.features.tags.enabled: must be a boolean", id="features shape"
    ),
    pytest.param({**VALID, "owner": "me"}, "chatApp.owner: is not a field of a chat app", id="unknown field"),
    pytest.param("support", "chatApp: must be an object", id="chatApp not an object"),
]


@pytest.mark.parametrize(("chat_app", "mentions"), REFUSED)
def test_invalid_chat_app_is_refused_naming_the_field_and_writes_nothing(admin_client, agents, chat_app, mentions):
    assert_error(post_app(admin_client, chat_app), 400, "INVALID_REQUEST", mentions=mentions)
    assert not ChatApp.objects.exists()


def test_a_chat_app_naming_an_agent_that_does_not_exist_is_404_invalid_agent_id(admin_client, agents):
    response = post_app(admin_client, {**VALID, "agentId": "ghost"})
    assert_error(response, 404, "INVALID_AGENT_ID", mentions="chatApp.agentId: agent ghost does not exist")
    assert not ChatApp.objects.exists()
    # With another rule broken too, the whole body is invalid: 400 naming both.
    response = post_app(admin_client, {**VALID, "agentId": "ghost", "applyRulesAs": "xor"})
    assert_error(response, 400, "INVALID_REQUEST", mentions="chatApp.agentId: agent ghost does not exist")


def test_refused_update_leaves_the_chat_app_unchanged(admin_client, agents):
    post_app(admin_client, VALID)
    assert_error(post_app(admin_client, {"chatAppId": "support", "title": "New", "agentId": "ghost"}), 404, "INVALID_AGENT_ID")
    stored = ChatApp.objects.get(pk="support")
    assert (stored.title, stored.agent_id) == ("Support", "helper")


def test_chat_app_endpoints_are_in_the_openapi_schema(anon_client, db):
    paths = anon_client.get("/api/schema/?format=json").json()["paths"]
    assert "post" in paths["/api/chat-admin/chat-app"]
    assert {"get", "delete"} <= set(paths["/api/chat-admin/chat-app/{chatAppId}"])
    assert "post" in paths["/api/chat-admin/chat-apps/search"]
    assert "get" in paths["/api/chat/chat-apps"]
