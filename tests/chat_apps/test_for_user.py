"""`GET /api/chat/chat-apps` (docs/api.md, "Chat apps"): the chat apps a user may use."""

from __future__ import annotations

import pytest

from chat.users.models import ChatUser
from tests.conftest import assert_error
from tests.factories import ChatAppFactory

INTERNAL, EXTERNAL = "internal-user", "external-user"


def listed(client, **query) -> list[str]:
    response = client.get("/api/chat/chat-apps", query)
    assert response.status_code == 200, response.json()
    assert response.json()["success"] is True
    return [app["chatAppId"] for app in response.json()["chatApps"]]


@pytest.mark.parametrize(
    ("user_types", "user_roles", "apply_rules_as", "user_type", "roles", "usable"),
    [
        # No rules: everyone.
        ([], [], "and", EXTERNAL, [], True),
        ([], [], "or", INTERNAL, ["beta"], True),
        # Only a type rule.
        ([INTERNAL], [], "and", INTERNAL, [], True),
        ([INTERNAL], [], "and", EXTERNAL, ["beta"], False),
        ([INTERNAL], [], "or", EXTERNAL, [], False),  # an empty list sets no rule, under `or` too
        # Only a role rule.
        ([], ["beta"], "and", EXTERNAL, ["beta", "x"], True),
        ([], ["beta"], "and", INTERNAL, ["x"], False),
        ([], ["beta"], "and", INTERNAL, [], False),
        ([], ["beta"], "or", EXTERNAL, [], False),  # an empty list sets no rule, under `or` too
        ([], ["beta"], "or", EXTERNAL, ["beta"], True),
        # Both rules.
        ([INTERNAL], ["beta"], "and", INTERNAL, ["beta"], True),
        ([INTERNAL], ["beta"], "and", INTERNAL, [], False),
        ([INTERNAL], ["beta"], "and", EXTERNAL, ["beta"], False),
        ([INTERNAL], ["beta"], "or", INTERNAL, [], True),
        ([INTERNAL], ["beta"], "or", EXTERNAL, ["beta"], True),
        ([INTERNAL], ["beta"], "or", EXTERNAL, ["gamma"], False),
        ([INTERNAL, EXTERNAL], ["beta", "gamma"], "and", EXTERNAL, ["gamma"], True),
    ],
)
def test_eligibility_follows_user_types_user_roles_and_apply_rules_as(
    client_for, user_types, user_roles, apply_rules_as, user_type, roles, usable
):
    ChatAppFactory(chat_app_id="guarded", user_types=user_types, user_roles=user_roles, apply_rules_as=apply_rules_as)
    client = client_for("pat", user_type=user_type, roles=roles)
    assert listed(client) == (["guarded"] if usable else [])


def test_disabled_apps_are_hidden(user_client):
    ChatAppFactory(chat_app_id="on")
    ChatAppFactory(chat_app_id="off", enabled=False)
    assert listed(user_client) == ["on"]
    assert listed(user_client, chatAppId="off") == []


def test_mock_apps_are_hidden_only_on_the_home_page(user_client):
    ChatAppFactory(chat_app_id="real")
    ChatAppFactory(chat_app_id="test-app", test_type="mock")
    assert listed(user_client) == ["real", "test-app"]
    assert listed(user_client, chatAppsForHomePage="true") == ["real"]
    assert listed(user_client, chatAppsForHomePage="false") == ["real", "test-app"]


def test_chat_app_id_narrows_to_one_app(user_client):
    ChatAppFactory(chat_app_id="one")
    ChatAppFactory(chat_app_id="two")
    assert listed(user_client, chatAppId="two") == ["two"]
    assert listed(user_client, chatAppId="three") == []


def test_apps_are_returned_as_full_chat_app_records(user_client):
    ChatAppFactory(chat_app_id="one", features={"traces": {"enabled": True}})
    app = user_client.get("/api/chat/chat-apps").json()["chatApps"][0]
    assert app["features"] == {"traces": {"enabled": True}}
    assert {"chatAppId", "title", "agentId", "enabled", "userTypes", "userRoles", "applyRulesAs", "modesSupported"} <= set(app)


def test_own_user_id_is_accepted(user_client):
    ChatAppFactory(chat_app_id="one")
    assert listed(user_client, userId="alice") == ["one"]


def test_another_users_id_is_refused_for_a_non_admin(user_client, db):
    ChatUser.objects.create_user("bob")
    assert_error(user_client.get("/api/chat/chat-apps", {"userId": "bob"}), 403, "INSUFFICIENT_PERMISSIONS")


def test_an_admin_sees_the_apps_of_the_user_named_by_user_id(admin_client, db):
    ChatUser.objects.create_user("bob", user_type=INTERNAL, roles=["beta"])
    ChatAppFactory(chat_app_id="beta-only", user_roles=["beta"])
    assert listed(admin_client) == []  # the admin has no beta role
    assert listed(admin_client, userId="bob") == ["beta-only"]


def test_an_admin_asking_for_an_unknown_user_gets_a_404(admin_client, db):
    assert_error(admin_client.get("/api/chat/chat-apps", {"userId": "ghost"}), 404, "NOT_FOUND", mentions="ghost")


def test_entity_field_path_is_accepted_and_does_not_filter(user_client):
    ChatAppFactory(chat_app_id="one")
    assert listed(user_client, customDataFieldPathToMatchUsersEntity="accountId") == ["one"]


def test_home_page_flag_must_be_a_boolean(user_client):
    assert_error(
        user_client.get("/api/chat/chat-apps", {"chatAppsForHomePage": "perhaps"}), 400, "INVALID_REQUEST", mentions="chatAppsForHomePage"
    )


def test_anonymous_caller_is_refused_with_401(anon_client, db):
    assert_error(anon_client.get("/api/chat/chat-apps"), 401)
