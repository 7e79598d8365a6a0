"""Django admin of chat apps: the same rules as the Admin API, saved through the same service."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentDefinition
from chat.chat_apps.models import ChatApp
from tests.factories import AgentFactory, ChatAppFactory

ADD_URL = "/admin/chat/chatapp/add/"


@pytest.fixture
def agent(db):
    return AgentFactory(agent_id="helper")


def form(**fields) -> dict[str, str]:
    data = {
        "chat_app_id": "support",
        "title": "Support",
        "description": "",
        "agent": "helper",
        "enabled": "on",
        "user_types": "[]",
        "user_roles": "[]",
        "apply_rules_as": "and",
        "modes_supported": "[]",
        "features": "{}",
        "test_type": "",
    }
    for name, value in fields.items():
        data[name] = value if isinstance(value, str) else json.dumps(value)
    return data


def test_changelist_shows_the_chat_app_columns_and_filters(staff, db):
    ChatAppFactory(chat_app_id="support", title="Support desk", test_type="mock")
    ChatAppFactory(chat_app_id="sales", enabled=False)
    html = staff.get("/admin/chat/chatapp/").content.decode()
    for header in ("column-chat_app_id", "column-title", "column-agent", "column-enabled", "column-test_type", "column-last_update"):
        assert header in html
    disabled = staff.get("/admin/chat/chatapp/?enabled__exact=0").content.decode()
    assert ">sales<" in disabled and ">support<" not in disabled
    assert ">support<" in staff.get("/admin/chat/chatapp/?q=desk").content.decode()


def test_add_form_creates_the_chat_app(staff, agent):
    features = {"traces": {"enabled": True}}
    response = staff.post(ADD_URL, form(user_types=["internal-user"], modes_supported=["embedded"], features=features))
    assert response.status_code == 302, response.content.decode()[:2000]
    app = ChatApp.objects.get(pk="support")
    assert (app.agent_id, app.user_types, app.modes_supported, app.features, app.enabled) == (
        "helper",
        ["internal-user"],
        ["embedded"],
        features,
        True,
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"features": {"tags": {"enabled": "yes"}}}, "features.tags.enabled: must be a boolean"),
        ({"features": {"verifyResponse": {"enabled": True, "autoRepromptThreshold": "Q"}}}, "must be one of B, C, F"),
        ({"features": {"colour": {}}}, "features.colour: is not a known feature"),
        ({"user_types": ["robot"]}, "userTypes[0]: must be one of internal-user, external-user"),
        ({"modes_supported": ["floating"]}, "modesSupported[0]: must be one of standalone, embedded"),
        ({"user_roles": [1]}, "userRoles: must be a list of non-empty strings"),
        ({"chat_app_id": "a b"}, "chatAppId: must be 1 to 128 letters"),
    ],
)
def test_add_form_refuses_what_the_api_refuses(staff, agent, fields, message):
    response = staff.post(ADD_URL, form(**fields))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not ChatApp.objects.exists()


def test_change_form_updates_through_the_service(staff, agent):
    AgentFactory(agent_id="other")
    staff.post(ADD_URL, form())
    data = form(title="Support desk", agent="other", user_roles=["beta"])
    data.pop("chat_app_id")
    response = staff.post("/admin/chat/chatapp/support/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    app = ChatApp.objects.get(pk="support")
    assert (app.title, app.agent_id, app.user_roles) == ("Support desk", "other", ["beta"])


def test_change_form_refuses_invalid_features_and_keeps_the_stored_ones(staff, agent):
    staff.post(ADD_URL, form(features={"traces": {"enabled": True}}))
    data = form(features={"traces": {"enabled": "sometimes"}})
    data.pop("chat_app_id")
    response = staff.post("/admin/chat/chatapp/support/change/", data)
    assert response.status_code == 200
    assert "features.traces.enabled: must be a boolean" in response.content.decode()
    assert ChatApp.objects.get(pk="support").features == {"traces": {"enabled": True}}


def test_deleting_an_agent_in_use_is_refused_in_the_admin_too(staff, agent):
    ChatAppFactory(chat_app_id="support", agent=agent)
    response = staff.post("/admin/agents/agentdefinition/helper/delete/", {"post": "yes"})
    assert response.status_code == 200
    assert "support" in response.content.decode()
    assert ChatApp.objects.filter(pk="support").exists()
    assert AgentDefinition.objects.filter(pk="helper").exists()
