"""Feature configuration (docs/api.md, "Features"): the shape check of a `features` object
and the merge of the site-wide configuration with a chat app's.

Plain Python with no Django or API imports, so that chat apps (Admin API and Django admin), the
site configuration and converse all check and resolve features the same way.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from chatplatform.jsonshape import Shape, ShapeError

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
USAGE_PERIODS = ("daily", "monthly")
USAGE_MEASURES = ("tokens", "costUsd")
TAG_LISTS = ("tagsEnabled", "tagsProhibited", "tagsDisabled")
REPROMPT_THRESHOLDS = ("B", "C", "F")
_MIME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/(\*|[a-z0-9][a-z0-9!#$&^_.+-]*)$")
_HEX_COLOUR = re.compile(r"^#(?:[0-9a-fA-F]{3}){1,2}$")
_ENTITY_NAME = "is required when the entity feature is enabled"
_MIME_RULE = "must be a lower-case MIME type such as text/plain or image/*"
_NON_EMPTY_STRINGS = "must be a list of non-empty strings"
_COLOUR_RULE = "must be a colour such as #1a73e8"


class InvalidFeatures(ValueError):
    """A features object that breaks a rule; `path` is relative to it (e.g. `tags.tagsEnabled[0].tag`)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


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
        "x-messages": {"type": "must be an object {tag, scope}"},
    },
    "x-messages": {"type": "must be a list of {tag, scope}"},
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
    "x-messages": {
        "type": "must be an object {tokens?, costUsd?}",
        "additionalProperties": f"is not a measure (measures: {', '.join(USAGE_MEASURES)})",
    },
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
                {
                    "properties": {"attributeName": {"type": "string", "minLength": 1, "x-messages": {"minLength": _ENTITY_NAME}}},
                    "required": ["attributeName"],
                    "x-messages": {"required": _ENTITY_NAME},
                },
            ],
        },
        "verifyResponse": _switch(autoRepromptThreshold={"type": "string", "enum": [*REPROMPT_THRESHOLDS, None], "nullable": True}),
        "traces": _switch(),
        "sessionInsights": _switch(),
        "logout": _switch(),
        "fileUpload": _switch(
            mimeTypesAllowed={
                "type": "array",
                "nullable": True,
                "items": {"type": "string", "pattern": _MIME_PATTERN.pattern, "x-messages": {"type": _MIME_RULE, "pattern": _MIME_RULE}},
                "x-messages": {"type": "must be a list of MIME types"},
            }
        ),
        "suggestions": _switch(
            suggestions={
                "type": "array",
                "nullable": True,
                "items": {"type": "string", "pattern": "\\S"},
                "x-messages": {"type": _NON_EMPTY_STRINGS, "items": _NON_EMPTY_STRINGS},
            },
            randomize={"type": "boolean", "nullable": True},
            maxToShow={"type": "integer", "minimum": 1, "nullable": True},
        ),
        "uiCustomization": _switch(
            title=_OPTIONAL_STRING,
            accentColor={
                "type": "string",
                "pattern": _HEX_COLOUR.pattern,
                "nullable": True,
                "x-messages": {"type": _COLOUR_RULE, "pattern": _COLOUR_RULE},
            },
        ),
        "chatDisclaimerNotice": _TEXT,
        "promptInputFieldLabel": _TEXT,
        "concurrentTurns": {
            "type": "object",
            "properties": {"strategy": {"type": "string", "enum": list(CONCURRENT_TURNS)}, "enabled": {"type": "boolean"}},
            "additionalProperties": False,
            "x-messages": {"type": "must be an object {strategy}"},
        },
        "usageLimits": {
            **_switch(
                perUser={
                    "type": "object",
                    "properties": dict.fromkeys(USAGE_PERIODS, _USAGE_MEASURES),
                    "additionalProperties": False,
                    "x-messages": {
                        "type": "must be an object {daily?, monthly?}",
                        "additionalProperties": f"is not a period (periods: {', '.join(USAGE_PERIODS)})",
                    },
                }
            ),
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
    "x-messages": {"additionalProperties": f"is not a known feature (known: {', '.join(KNOWN_FEATURES)})"},
}
_FEATURES = Shape(FEATURES_SCHEMA)


def validate_features(value: Any) -> dict[str, Any]:
    """The features object as given, when every known feature has a valid shape.

    Raises InvalidFeatures naming the first offending path. Unknown feature names are refused,
    because a misspelt feature would otherwise be silently off.
    """
    try:
        _FEATURES.check(value)
    except ShapeError as error:
        raise InvalidFeatures(error.path, error.message) from None
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
