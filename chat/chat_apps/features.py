"""Feature configuration (docs/api.md, "Features"): the shape check of a `features` object
and the merge of the site-wide configuration with a chat app's.

Plain Python with no Django or API imports, so that chat apps (Admin API and Django admin), the
site configuration and converse all check and resolve features the same way.
"""

from __future__ import annotations

import copy
import re
from typing import Any

KNOWN_FEATURES = (
    "tags",
    "instructionAugmentation",
    "entity",
    "verifyResponse",
    "traces",
    "sessionInsights",
    "fileUpload",
    "suggestions",
    "chatDisclaimerNotice",
    "promptInputFieldLabel",
    "logout",
    "uiCustomization",
    "concurrentTurns",
    "usageLimits",
)
CONCURRENT_TURNS = ("queue", "reject", "interrupt")  # what a second message does while a turn runs
TAG_LISTS = ("tagsEnabled", "tagsProhibited", "tagsDisabled")
REPROMPT_THRESHOLDS = ("B", "C", "F")
# Features that are an `{enabled, ...}` object whose other keys are kept as sent.
_SWITCHES = ("traces", "sessionInsights", "logout")
_MIME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/(\*|[a-z0-9][a-z0-9!#$&^_.+-]*)$")
_HEX_COLOUR = re.compile(r"^#(?:[0-9a-fA-F]{3}){1,2}$")
# Features that are a text shown in the chat UI, or an object carrying it.
_TEXTS = ("chatDisclaimerNotice", "promptInputFieldLabel")


class InvalidFeatures(ValueError):
    """A features object that breaks a rule; `path` is relative to it (e.g. `tags.tagsEnabled[0].tag`)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def _enabled(value: Any, path: str, *, required: bool = True) -> None:
    if not isinstance(value, dict):
        raise InvalidFeatures(path, "must be an object")
    if "enabled" not in value:
        if required:
            raise InvalidFeatures(f"{path}.enabled", "is required and must be a boolean")
    elif not isinstance(value["enabled"], bool):
        raise InvalidFeatures(f"{path}.enabled", "must be a boolean")


def _optional_string(value: dict[str, Any], key: str, path: str) -> None:
    if value.get(key) is not None and not isinstance(value[key], str):
        raise InvalidFeatures(f"{path}.{key}", "must be a string")


def _check_tags(value: Any) -> None:
    _enabled(value, "tags")
    for key in TAG_LISTS:
        refs = value.get(key)
        if refs is None:
            continue
        if not isinstance(refs, list):
            raise InvalidFeatures(f"tags.{key}", "must be a list of {tag, scope}")
        for index, ref in enumerate(refs):
            where = f"tags.{key}[{index}]"
            if not isinstance(ref, dict):
                raise InvalidFeatures(where, "must be an object {tag, scope}")
            for part in ("tag", "scope"):
                if not isinstance(ref.get(part), str) or not ref[part]:
                    raise InvalidFeatures(f"{where}.{part}", "is required and must be a non-empty string")


def _check_entity(value: Any) -> None:
    _enabled(value, "entity")
    _optional_string(value, "attributeName", "entity")
    _optional_string(value, "displayNameSingular", "entity")
    # The entity is read from the user's custom data at this name.
    if value["enabled"] and not value.get("attributeName"):
        raise InvalidFeatures("entity.attributeName", "is required when the entity feature is enabled")


def _check_verify_response(value: Any) -> None:
    _enabled(value, "verifyResponse")
    threshold = value.get("autoRepromptThreshold")
    if threshold is not None and threshold not in REPROMPT_THRESHOLDS:
        raise InvalidFeatures("verifyResponse.autoRepromptThreshold", f"must be one of {', '.join(REPROMPT_THRESHOLDS)}")


def _check_file_upload(value: Any) -> None:
    """`{enabled, mimeTypesAllowed}`: each a MIME type (`text/plain`) or a family (`image/*`), lower case."""
    _enabled(value, "fileUpload")
    allowed = value.get("mimeTypesAllowed")
    if allowed is None:
        return
    if not isinstance(allowed, list):
        raise InvalidFeatures("fileUpload.mimeTypesAllowed", "must be a list of MIME types")
    for index, pattern in enumerate(allowed):
        if not isinstance(pattern, str) or not _MIME_PATTERN.match(pattern):
            raise InvalidFeatures(f"fileUpload.mimeTypesAllowed[{index}]", "must be a lower-case MIME type such as text/plain or image/*")


def _check_suggestions(value: Any) -> None:
    """`{enabled, suggestions: [string], randomize?, maxToShow?}` (docs/api.md, "Features")."""
    _enabled(value, "suggestions")
    items = value.get("suggestions")
    if items is not None and (not isinstance(items, list) or not all(isinstance(item, str) and item.strip() for item in items)):
        raise InvalidFeatures("suggestions.suggestions", "must be a list of non-empty strings")
    if value.get("randomize") is not None and not isinstance(value["randomize"], bool):
        raise InvalidFeatures("suggestions.randomize", "must be a boolean")
    shown = value.get("maxToShow")
    if shown is not None and (not isinstance(shown, int) or isinstance(shown, bool) or shown < 1):
        raise InvalidFeatures("suggestions.maxToShow", "must be a whole number of at least 1")


def _check_ui_customization(value: Any) -> None:
    """`{enabled, title?, accentColor?}`: the page's heading and its accent colour (#rgb or #rrggbb)."""
    _enabled(value, "uiCustomization")
    _optional_string(value, "title", "uiCustomization")
    colour = value.get("accentColor")
    if colour is not None and (not isinstance(colour, str) or not _HEX_COLOUR.match(colour)):
        raise InvalidFeatures("uiCustomization.accentColor", "must be a colour such as #1a73e8")


def _check_concurrent_turns(value: Any) -> None:
    """`{strategy: queue|reject|interrupt}` (docs/api.md, "A second message")."""
    if not isinstance(value, dict):
        raise InvalidFeatures("concurrentTurns", "must be an object {strategy}")
    unknown = sorted(set(value) - {"strategy", "enabled"})
    if unknown:
        raise InvalidFeatures(f"concurrentTurns.{unknown[0]}", "is not a field of concurrentTurns (fields: strategy)")
    if value.get("strategy", "queue") not in CONCURRENT_TURNS:
        raise InvalidFeatures("concurrentTurns.strategy", f"must be one of {', '.join(CONCURRENT_TURNS)}")


USAGE_PERIODS = ("daily", "monthly")
USAGE_MEASURES = ("tokens", "costUsd")


def _check_usage_limits(value: Any) -> None:
    """`{enabled, perUser: {daily?: {tokens?, costUsd?}, monthly?: {…}}}` (docs/api.md, "Usage limits")."""
    _enabled(value, "usageLimits")
    unknown = sorted(set(value) - {"enabled", "perUser"})
    if unknown:
        raise InvalidFeatures(f"usageLimits.{unknown[0]}", "is not a field of usageLimits (fields: enabled, perUser)")
    per_user = value.get("perUser", {})
    if not isinstance(per_user, dict):
        raise InvalidFeatures("usageLimits.perUser", "must be an object {daily?, monthly?}")
    for period, limits in per_user.items():
        where = f"usageLimits.perUser.{period}"
        if period not in USAGE_PERIODS:
            raise InvalidFeatures(where, "is not a period (periods: daily, monthly)")
        if not isinstance(limits, dict):
            raise InvalidFeatures(where, "must be an object {tokens?, costUsd?}")
        for measure, limit in limits.items():
            if measure not in USAGE_MEASURES:
                raise InvalidFeatures(f"{where}.{measure}", "is not a measure (measures: tokens, costUsd)")
            whole = measure == "tokens"
            if limit is None:
                continue
            if isinstance(limit, bool) or not isinstance(limit, int if whole else (int, float)) or limit < 0:
                rule = "must be a whole number of at least 0" if whole else "must be a number of at least 0"
                raise InvalidFeatures(f"{where}.{measure}", rule)


def _check_text(value: Any, name: str) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, dict):
        raise InvalidFeatures(name, "must be a string or an object")
    _enabled(value, name, required=False)
    for key, item in value.items():
        if key != "enabled" and item is not None and not isinstance(item, str):
            raise InvalidFeatures(f"{name}.{key}", "must be a string")


def _switch(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"enabled": {"type": "boolean"}, **properties}, "required": ["enabled"]}


_OPTIONAL_STRING = {"type": "string", "nullable": True}
_TAG_REFS = {
    "type": "array",
    "nullable": True,
    "items": {
        "type": "object",
        "properties": {"tag": {"type": "string", "minLength": 1}, "scope": {"type": "string", "minLength": 1}},
        "required": ["tag", "scope"],
    },
}
_TEXT = {
    "anyOf": [
        {"type": "string"},
        {"type": "object", "properties": {"enabled": {"type": "boolean"}}, "additionalProperties": {"type": "string", "nullable": True}},
    ]
}
_USAGE_MEASURES = {
    "type": "object",
    "properties": {
        "tokens": {"type": "integer", "minimum": 0, "nullable": True},
        "costUsd": {"type": "number", "minimum": 0, "nullable": True},
    },
    "additionalProperties": False,
}
# The OpenAPI schema of what validate_features accepts, rule for rule.
FEATURES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tags": _switch(**dict.fromkeys(TAG_LISTS, _TAG_REFS)),
        "instructionAugmentation": _switch(),
        "entity": {
            **_switch(attributeName=_OPTIONAL_STRING, displayNameSingular=_OPTIONAL_STRING),
            # attributeName is required when the feature is enabled
            "anyOf": [
                {"properties": {"enabled": {"enum": [False]}}},
                {"properties": {"attributeName": {"type": "string", "minLength": 1}}, "required": ["attributeName"]},
            ],
        },
        "verifyResponse": _switch(autoRepromptThreshold={"type": "string", "enum": [*REPROMPT_THRESHOLDS, None], "nullable": True}),
        "traces": _switch(),
        "sessionInsights": _switch(),
        "logout": _switch(),
        "fileUpload": _switch(
            mimeTypesAllowed={"type": "array", "nullable": True, "items": {"type": "string", "pattern": _MIME_PATTERN.pattern}}
        ),
        "suggestions": _switch(
            suggestions={"type": "array", "nullable": True, "items": {"type": "string", "pattern": "\\S"}},
            randomize={"type": "boolean", "nullable": True},
            maxToShow={"type": "integer", "minimum": 1, "nullable": True},
        ),
        "uiCustomization": _switch(
            title=_OPTIONAL_STRING, accentColor={"type": "string", "pattern": _HEX_COLOUR.pattern, "nullable": True}
        ),
        "chatDisclaimerNotice": _TEXT,
        "promptInputFieldLabel": _TEXT,
        "concurrentTurns": {
            "type": "object",
            "properties": {"strategy": {"type": "string", "enum": list(CONCURRENT_TURNS)}, "enabled": {"type": "boolean"}},
            "additionalProperties": False,
        },
        "usageLimits": {
            **_switch(
                perUser={
                    "type": "object",
                    "properties": dict.fromkeys(USAGE_PERIODS, _USAGE_MEASURES),
                    "additionalProperties": False,
                }
            ),
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}


def validate_features(value: Any) -> dict[str, Any]:
    """The features object as given, when every known feature has a valid shape.

    Raises InvalidFeatures naming the first offending path. Unknown feature names are refused,
    because a misspelt feature would otherwise be silently off.
    """
    if not isinstance(value, dict):
        raise InvalidFeatures("", "must be an object")
    for name, feature in value.items():
        if name not in KNOWN_FEATURES:
            raise InvalidFeatures(name, f"is not a known feature (known: {', '.join(KNOWN_FEATURES)})")
        if name == "tags":
            _check_tags(feature)
        elif name == "instructionAugmentation":
            _enabled(feature, name)
        elif name == "entity":
            _check_entity(feature)
        elif name == "verifyResponse":
            _check_verify_response(feature)
        elif name == "fileUpload":
            _check_file_upload(feature)
        elif name == "suggestions":
            _check_suggestions(feature)
        elif name == "uiCustomization":
            _check_ui_customization(feature)
        elif name == "concurrentTurns":
            _check_concurrent_turns(feature)
        elif name == "usageLimits":
            _check_usage_limits(feature)
        elif name in _SWITCHES:
            _enabled(feature, name)
        else:
            _check_text(feature, name)
    return value


def concurrent_turns(features: dict[str, Any]) -> str:
    """What a second message does while a turn of its session runs: queue (the default), reject or interrupt."""
    feature = features.get("concurrentTurns")
    return feature.get("strategy", "queue") if isinstance(feature, dict) else "queue"


def _is_on(feature: Any) -> bool:
    return isinstance(feature, dict) and feature.get("enabled") is True


def is_enabled(features: dict[str, Any], name: str) -> bool:
    """Whether feature `name` is on in a features object: an object with `enabled: true`."""
    return _is_on(features.get(name))


def resolve_features(*, site: dict[str, Any], app: dict[str, Any]) -> dict[str, Any]:
    """The features in force for a chat app (docs/api.md, "Features"). Both inputs are already valid.

    - `tags`: enabled only when enabled site-wide AND in the app. `tagsEnabled` and `tagsDisabled`
      are the app's; `tagsProhibited` is the site's plus any the app adds (it can only narrow).
    - `instructionAugmentation`: enabled only when enabled site-wide and not switched off by the
      app (`enabled: false`); an app that does not mention it follows the site.
    - every other feature: the app's value over the site's. Two objects merge key by key (the
      app's keys win, so an app can switch off a site feature and keep its settings); otherwise
      the app's value replaces the site's. A feature neither mentions is absent.
    """
    resolved: dict[str, Any] = {}
    for name in KNOWN_FEATURES:
        site_value, app_value = site.get(name), app.get(name)
        if name == "tags":
            if site_value is None and app_value is None:
                continue
            site_tags, app_tags = site_value or {}, app_value or {}
            resolved[name] = {
                "enabled": _is_on(site_tags) and _is_on(app_tags),
                "tagsEnabled": list(app_tags.get("tagsEnabled") or []),
                "tagsDisabled": list(app_tags.get("tagsDisabled") or []),
                "tagsProhibited": [*(site_tags.get("tagsProhibited") or []), *(app_tags.get("tagsProhibited") or [])],
            }
        elif name == "instructionAugmentation":
            if site_value is None and app_value is None:
                continue
            switched_off = isinstance(app_value, dict) and app_value.get("enabled") is False
            resolved[name] = {**(site_value or {}), **(app_value or {}), "enabled": _is_on(site_value) and not switched_off}
        elif app_value is None:
            if site_value is not None:
                resolved[name] = site_value
        elif isinstance(site_value, dict) and isinstance(app_value, dict):
            resolved[name] = {**site_value, **app_value}
        else:
            resolved[name] = app_value
    return copy.deepcopy(resolved)  # callers may adjust the result; the site configuration stays put
