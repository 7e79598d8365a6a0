"""What the model receives (system prompt, tag instructions) and who may converse (access, rollout),
through `POST /api/chat/converse` against the scripted OpenAI-compatible server."""

from __future__ import annotations

import pytest

from tags.models import TagStatus, UsageMode
from tests.conftest import assert_error
from tests.converse.helpers import converse
from tests.factories import TagDefinitionFactory
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)


def system_prompt_of(request: dict) -> str:
    first = request["messages"][0]
    assert first["role"] == "system"
    return first["content"]


async def test_the_system_prompt_is_the_base_prompt_with_placeholders_rendered(app, async_client_for, openai_server, settings):
    settings.CHAT_COMPANY_NAME = "Acme"
    app.agent.base_prompt = (
        "Hi {{user.firstName}} {{user.lastName}} <{{user.email}}>, {{user.userType}} {{user.userId}} "
        "on plan {{customData.plan}} at {{company.name}}.[{{customData.missing}}{{user.nope.deeper}}]"
    )
    await app.agent.asave()
    openai_server.script([Reply(text="Hello.")])

    client = async_client_for("alice", given_name="Alice", family_name="O'Hara", email="alice@example.com", custom_data={"plan": "gold"})
    response = await converse(client)

    assert response.status_code == 200, response.json()
    assert system_prompt_of(openai_server.requests[0]) == (
        "Hi Alice O'Hara <alice@example.com>, external-user alice on plan gold at Acme.[]"
    )


SITE_ON = {"tags": {"enabled": True, "tagsProhibited": [{"scope": "demo", "tag": "banned"}]}}
APP_ON = {"tags": {"enabled": True, "tagsEnabled": [{"scope": "demo", "tag": "card"}], "tagsDisabled": [{"scope": "demo", "tag": "muted"}]}}


@pytest.fixture
def tag_definitions(transactional_db):
    TagDefinitionFactory(tag="chart", usage_mode=UsageMode.GLOBAL)
    TagDefinitionFactory(tag="card", usage_mode=UsageMode.CHAT_APP)
    TagDefinitionFactory(tag="other-app-card", usage_mode=UsageMode.CHAT_APP)
    TagDefinitionFactory(tag="banned", usage_mode=UsageMode.GLOBAL)
    TagDefinitionFactory(tag="muted", usage_mode=UsageMode.GLOBAL)
    TagDefinitionFactory(tag="off", usage_mode=UsageMode.GLOBAL, status=TagStatus.DISABLED)
    TagDefinitionFactory(tag="tool-only", usage_mode=UsageMode.GLOBAL, can_be_generated_by_llm=False)


@pytest.mark.parametrize(
    ("site", "app_features", "request_features", "expected"),
    [
        (SITE_ON, APP_ON, {}, {"demo.chart", "demo.card"}),
        ({}, APP_ON, {}, set()),
        (SITE_ON, {}, {}, set()),
        (SITE_ON, {"tags": {"enabled": False}}, {}, set()),
        (SITE_ON, APP_ON, {"tags": {"enabled": False}}, set()),
        ({"tags": {"enabled": True}}, {"tags": {"enabled": True}}, {}, {"demo.chart", "demo.banned", "demo.muted"}),
    ],
    ids=["site-and-app-on", "site-off", "app-silent", "app-off", "request-narrows", "no-lists"],
)
async def test_tag_instructions_are_present_exactly_for_the_usable_tags(
    app, async_client_for, openai_server, settings, tag_definitions, site, app_features, request_features, expected
):
    settings.CHAT_SITE_FEATURES = site
    app.features = app_features
    await app.asave()
    app.agent.base_prompt = "Be brief.\n\n{{tag-instructions}}\n\nEnd."
    await app.agent.asave()
    openai_server.script([Reply(text="Ok.")])

    response = await converse(async_client_for("alice"), features=request_features)

    assert response.status_code == 200, response.json()
    prompt = system_prompt_of(openai_server.requests[0])
    present = {part.split('"')[0] for part in prompt.split('<tag-instructions type="')[1:]}
    assert present == expected
    assert prompt.startswith("Be brief.") and prompt.endswith("End.")


async def test_tag_instructions_are_appended_when_the_prompt_has_no_placeholder(app, async_client_for, openai_server, settings):
    settings.CHAT_SITE_FEATURES = SITE_ON
    app.features = APP_ON
    await app.asave()
    await TagDefinitionFactory._meta.model.objects.acreate(**_tag_fields("chart"))
    openai_server.script([Reply(text="Ok.")])

    await converse(async_client_for("alice"))

    prompt = system_prompt_of(openai_server.requests[0])
    assert prompt.startswith('You are a helpful assistant.\n\n<tag-instructions type="demo.chart">')


def _tag_fields(tag: str) -> dict:
    definition = TagDefinitionFactory.build(tag=tag)
    return {f.name: getattr(definition, f.name) for f in definition._meta.concrete_fields if f.name != "id"}


@pytest.mark.parametrize(
    ("rules", "custom_data", "allowed"),
    [
        ([{"effect": "allow", "condition": 'user.userType == "internal-user"'}], {}, False),
        ([{"effect": "allow", "condition": 'customData.plan == "gold"'}], {"plan": "gold"}, True),
        ([{"effect": "deny", "condition": 'customData.plan == "gold"'}, {"effect": "allow"}], {"plan": "gold"}, False),
        ([{"effect": "allow", "order": 2}, {"effect": "deny", "order": 1, "condition": 'account.region == "eu"'}], {"region": "eu"}, False),
        ([{"effect": "allow", "order": 2}, {"effect": "deny", "order": 1, "condition": 'account.region == "eu"'}], {"region": "us"}, True),
        ([{"effect": "allow"}], {}, True),
        ([{"effect": "deny"}], {}, False),
        ([{"effect": "allow", "condition": "customData.missing.deeper == 1"}], {}, False),
        ([{"effect": "deny", "condition": "customData.missing > 3"}, {"effect": "allow"}], {}, True),
        (None, {}, True),
    ],
    ids=["no-match", "allow", "first-deny", "order-deny", "order-allow", "no-condition", "deny-all", "error-is-no", "error-skips", "open"],
)
async def test_access_rules_decide_who_may_converse(app, async_client_for, openai_server, rules, custom_data, allowed):
    app.agent.access_rules = rules
    await app.agent.asave()
    openai_server.script([Reply(text="Ok.")])

    response = await converse(async_client_for("alice", custom_data=custom_data))

    if allowed:
        assert response.status_code == 200, response.json()
    else:
        assert_error(response, 403, "INSUFFICIENT_PERMISSIONS")
        assert openai_server.requests == []


@pytest.mark.parametrize(
    ("policy", "custom_data", "allowed"),
    [
        ({"betaAccounts": ["acc-1"]}, {"accountId": "acc-1"}, True),
        ({"betaAccounts": ["acc-1"]}, {"accountId": "acc-2"}, False),
        ({"betaAccounts": ["acc-1"]}, {}, False),
        ({"regionRestrictions": ["eu-west-1"]}, {"region": "eu-west-1"}, True),
        ({"regionRestrictions": ["eu-west-1"]}, {"region": "us-east-1"}, False),
        ({"betaAccounts": ["acc-1"], "regionRestrictions": ["eu-west-1"]}, {"accountId": "acc-1", "region": "us-east-1"}, False),
        ({"betaAccounts": [], "regionRestrictions": []}, {}, True),
    ],
)
async def test_rollout_accounts_and_regions_limit_who_may_converse(app, async_client_for, openai_server, policy, custom_data, allowed):
    app.agent.rollout_policy = policy
    await app.agent.asave()
    openai_server.script([Reply(text="Ok.")])

    response = await converse(async_client_for("alice", custom_data=custom_data))

    if allowed:
        assert response.status_code == 200, response.json()
    else:
        assert_error(response, 403, "INSUFFICIENT_PERMISSIONS")


async def test_an_operators_change_reaches_the_very_next_turn(app, async_client_for, openai_server):
    """Turns keep chat apps, agents and tools in memory; any write through the Admin API drops them."""
    openai_server.script([Reply(text="One."), Reply(text="Two.")])
    alice, operator = async_client_for("alice"), async_client_for("operator", admin=True)
    assert (await converse(alice)).status_code == 200

    changed = await operator.post(
        "/api/chat-admin/agent", {"agent": {"agentId": "helper", "basePrompt": "You are terse."}}, content_type="application/json"
    )
    assert changed.status_code == 200, changed.json()
    assert (await converse(alice)).status_code == 200
    assert system_prompt_of(openai_server.requests[-1]) == "You are terse."

    disabled = await operator.post(
        "/api/chat-admin/chat-app", {"chatApp": {"chatAppId": "support", "enabled": False}}, content_type="application/json"
    )
    assert disabled.status_code == 200, disabled.json()
    assert_error(await converse(alice), 403, "INSUFFICIENT_PERMISSIONS")
