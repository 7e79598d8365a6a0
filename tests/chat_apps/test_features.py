"""Feature configuration (docs/api.md, "Features"): the one shape check, and the site/app merge."""

from __future__ import annotations

import pytest

from chat.chat_apps.features import InvalidFeatures, resolve_features, validate_features
from tests.factories import AgentFactory

VALID_FEATURES = {
    "tags": {
        "enabled": True,
        "tagsEnabled": [{"tag": "chart", "scope": "acme"}],
        "tagsProhibited": [],
        "tagsDisabled": [{"scope": "system", "tag": "image"}],
    },
    "instructionAugmentation": {"enabled": True},
    "entity": {"enabled": True, "attributeName": "accountId", "displayNameSingular": "Account", "displayNamePlural": "Accounts"},
    "verifyResponse": {"enabled": True, "autoRepromptThreshold": "C"},
    "traces": {"enabled": False},
    "sessionInsights": {"enabled": True},
    "fileUpload": {"enabled": True, "mimeTypesAllowed": ["text/csv"]},
    "suggestions": {"enabled": True, "suggestions": ["Hi"]},
    "chatDisclaimerNotice": "Answers may be wrong.",
    "promptInputFieldLabel": {"enabled": True, "promptInputFieldLabel": "Ask away"},
    "logout": {"enabled": False},
    "uiCustomization": {"enabled": True, "title": "Help desk", "accentColor": "#1a73e8"},
}


def test_every_known_feature_in_a_valid_shape_is_accepted():
    assert validate_features(VALID_FEATURES) == VALID_FEATURES
    assert validate_features({}) == {}


@pytest.mark.parametrize(
    ("features", "path", "message"),
    [
        ([], "", "must be an object"),
        ({"colour": {"enabled": True}}, "colour", "is not a known feature"),
        ({"tags": True}, "tags", "must be an object"),
        ({"tags": {}}, "tags.enabled", "is required and must be a boolean"),
        ({"tags": {"enabled": 1}}, "tags.enabled", "must be a boolean"),
        ({"tags": {"enabled": True, "tagsEnabled": "chart"}}, "tags.tagsEnabled", "must be a list of {tag, scope}"),
        ({"tags": {"enabled": True, "tagsProhibited": ["chart"]}}, "tags.tagsProhibited[0]", "must be an object {tag, scope}"),
        ({"tags": {"enabled": True, "tagsDisabled": [{"tag": "x"}]}}, "tags.tagsDisabled[0].scope", "is required"),
        ({"instructionAugmentation": {"enabled": "on"}}, "instructionAugmentation.enabled", "must be a boolean"),
        ({"entity": {"enabled": True}}, "entity.attributeName", "is required when the entity feature is enabled"),
        ({"entity": {"enabled": False, "attributeName": 5}}, "entity.attributeName", "must be a string"),
        ({"entity": {"enabled": False, "displayNameSingular": []}}, "entity.displayNameSingular", "must be a string"),
        (
            {"verifyResponse": {"enabled": True, "autoRepromptThreshold": "A"}},
            "verifyResponse.autoRepromptThreshold",
            "must be one of B, C, F",
        ),
        ({"traces": {}}, "traces.enabled", "is required"),
        ({"sessionInsights": {"enabled": None}}, "sessionInsights.enabled", "must be a boolean"),
        ({"fileUpload": []}, "fileUpload", "must be an object"),
        ({"suggestions": {"enabled": "yes"}}, "suggestions.enabled", "must be a boolean"),
        ({"chatDisclaimerNotice": 3}, "chatDisclaimerNotice", "must be a string or an object"),
        ({"promptInputFieldLabel": {"promptInputFieldLabel": 3}}, "promptInputFieldLabel.promptInputFieldLabel", "must be a string"),
        ({"fileUpload": {"enabled": True, "mimeTypesAllowed": "text/plain"}}, "fileUpload.mimeTypesAllowed", "must be a list"),
        ({"fileUpload": {"enabled": True, "mimeTypesAllowed": ["Text/Plain"]}}, "fileUpload.mimeTypesAllowed[0]", "lower-case MIME type"),
        ({"fileUpload": {"enabled": True, "mimeTypesAllowed": ["*/*"]}}, "fileUpload.mimeTypesAllowed[0]", "lower-case MIME type"),
        ({"suggestions": {"enabled": True, "suggestions": ["ok", ""]}}, "suggestions.suggestions", "non-empty strings"),
        ({"suggestions": {"enabled": True, "randomize": "yes"}}, "suggestions.randomize", "must be a boolean"),
        ({"suggestions": {"enabled": True, "maxToShow": 0}}, "suggestions.maxToShow", "at least 1"),
        ({"logout": {"enabled": "no"}}, "logout.enabled", "must be a boolean"),
        ({"uiCustomization": {"enabled": True, "accentColor": "red; background: url(x)"}}, "uiCustomization.accentColor", "a colour"),
        ({"uiCustomization": {"enabled": True, "title": 7}}, "uiCustomization.title", "must be a string"),
    ],
)
def test_each_shape_rule_names_the_path(features, path, message):
    with pytest.raises(InvalidFeatures) as raised:
        validate_features(features)
    assert raised.value.path == path
    assert message in raised.value.message


@pytest.mark.parametrize(("site_on", "app_on", "resolved_on"), [(True, True, True), (True, False, False), (False, True, False)])
def test_tags_are_on_only_when_on_site_wide_and_in_the_app(site_on, app_on, resolved_on):
    resolved = resolve_features(site={"tags": {"enabled": site_on}}, app={"tags": {"enabled": app_on}})
    assert resolved["tags"]["enabled"] is resolved_on


def test_tags_need_the_app_to_switch_them_on():
    assert resolve_features(site={"tags": {"enabled": True}}, app={})["tags"]["enabled"] is False


def test_tag_lists_come_from_the_app_and_prohibitions_from_both():
    site = {"tags": {"enabled": True, "tagsProhibited": [{"scope": "s", "tag": "bad"}], "tagsEnabled": [{"scope": "s", "tag": "site"}]}}
    app = {
        "tags": {
            "enabled": True,
            "tagsEnabled": [{"scope": "s", "tag": "mine"}],
            "tagsDisabled": [{"scope": "s", "tag": "off"}],
            "tagsProhibited": [{"scope": "s", "tag": "worse"}],
        }
    }
    assert resolve_features(site=site, app=app)["tags"] == {
        "enabled": True,
        "tagsEnabled": [{"scope": "s", "tag": "mine"}],
        "tagsDisabled": [{"scope": "s", "tag": "off"}],
        "tagsProhibited": [{"scope": "s", "tag": "bad"}, {"scope": "s", "tag": "worse"}],
    }


@pytest.mark.parametrize(
    ("site", "app", "resolved_on"),
    [
        ({"enabled": True}, None, True),  # the app follows the site when it does not mention it
        ({"enabled": True}, {"enabled": True}, True),
        ({"enabled": True}, {"enabled": False}, False),  # switched off by the app
        ({"enabled": False}, {"enabled": True}, False),  # must be on site-wide first
        (None, {"enabled": True}, False),
    ],
)
def test_instruction_augmentation_needs_the_site_and_no_veto_from_the_app(site, app, resolved_on):
    resolved = resolve_features(
        site={} if site is None else {"instructionAugmentation": site}, app={} if app is None else {"instructionAugmentation": app}
    )
    assert resolved["instructionAugmentation"]["enabled"] is resolved_on


def test_other_features_take_the_apps_value_over_the_sites():
    site = {
        "verifyResponse": {"enabled": True, "autoRepromptThreshold": "C"},
        "traces": {"enabled": True},
        "promptInputFieldLabel": "Ask a question",
        "chatDisclaimerNotice": "Site notice",
    }
    app = {
        "verifyResponse": {"enabled": False},
        "promptInputFieldLabel": "Ask support",
        "entity": {"enabled": True, "attributeName": "acct"},
    }
    assert resolve_features(site=site, app=app) == {
        "verifyResponse": {"enabled": False, "autoRepromptThreshold": "C"},
        "traces": {"enabled": True},
        "promptInputFieldLabel": "Ask support",
        "chatDisclaimerNotice": "Site notice",
        "entity": {"enabled": True, "attributeName": "acct"},
    }


def test_resolving_never_changes_the_site_configuration():
    site = {"traces": {"enabled": True}, "tags": {"enabled": True, "tagsProhibited": [{"scope": "s", "tag": "x"}]}}
    resolved = resolve_features(site=site, app={})
    resolved["traces"]["enabled"] = False
    resolved["tags"]["tagsProhibited"].append({"scope": "s", "tag": "y"})
    assert site == {"traces": {"enabled": True}, "tags": {"enabled": True, "tagsProhibited": [{"scope": "s", "tag": "x"}]}}


def test_the_admin_api_uses_the_same_feature_check(admin_client, db):
    AgentFactory(agent_id="helper")
    ok = admin_client.post(
        "/api/chat-admin/chat-app",
        {"chatApp": {"chatAppId": "a", "title": "A", "agentId": "helper", "features": VALID_FEATURES}},
        format="json",
    )
    assert ok.status_code == 200, ok.json()
    assert ok.json()["chatApp"]["features"] == VALID_FEATURES
    refused = admin_client.post(
        "/api/chat-admin/chat-app",
        {"chatApp": {"chatAppId": "a", "features": {"verifyResponse": {"enabled": True, "autoRepromptThreshold": "Z"}}}},
        format="json",
    )
    body = refused.json()
    assert refused.status_code == 400
    assert body["error"] == "chatApp.features.verifyResponse.autoRepromptThreshold: must be one of B, C, F"
