"""Validation rules of the JSON parts of a tag definition (docs/api.md, "Tag definitions";
docs/widgets.md, "Widget kinds").

Each `clean_*` function takes a wire value and returns its canonical form, or raises DRF's
ValidationError whose detail is nested like the value, so the envelope names the exact field
(`tagDefinition.widget.webComponent.store.storeBucket: ...`). The serializer calls them for the API,
the batch deploy and the Django admin alike: one place per rule.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any
from urllib.parse import urlsplit

from chatplatform.api.fields import error_at
from chatplatform.jsonshape import Shape, ShapeError, is_number
from tags.models import WidgetType

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]+$")
NAME_RULE = "must contain only letters, digits, hyphens and underscores (no spaces)"

WIDGET_TYPES: tuple[str, ...] = tuple(WidgetType.values)
BUILT_IN_TYPES = ("chart", "image", "prompt")
ENCODINGS = ("gzip", "gzip+base64", "none")
RENDERING_CONTEXTS = ("inline", "canvas", "dialog", "spotlight", "static", "hero")

# Options per context. inline, canvas and dialog have none shown beyond `enabled`,
# so their other keys are kept as given for the client runtime.
_BOOLEAN = "boolean"
_NUMBER = "number"
_NON_NEGATIVE = "non-negative number"
_SIZING = "sizing"
_CONTEXT_OPTIONS: dict[str, dict[str, str]] = {
    "spotlight": {
        "isDefault": _BOOLEAN,
        "displayOrder": _NUMBER,
        "singleton": _BOOLEAN,
        "showInUnpinnedMenu": _BOOLEAN,
        "autoCreateInstance": _BOOLEAN,
        "startCollapsed": _BOOLEAN,
    },
    "static": {"shutDownAfterMs": _NON_NEGATIVE},
    "hero": {"autoCreateInstance": _BOOLEAN, "startCollapsed": _BOOLEAN, "sizing": _SIZING},
}
_SIZING_LENGTHS = ("width", "height", "minWidth", "maxWidth")
_SIZING_PIXELS = ("minHeight", "maxHeight")

_CSS_LENGTH = re.compile(
    r"^(?:0|\+?(?:\d+\.?\d*|\.\d+)(?:px|%|em|rem|ex|ch|vw|vh|vmin|vmax|svw|svh|lvw|lvh|dvw|dvh|cqw|cqh|cqi|cqb|cm|mm|q|in|pt|pc))$"
)
_CSS_FUNCTION = re.compile(r"^(?:calc|min|max|clamp)\([0-9a-z%.,+\-*/ ()]+\)$")

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# HTML's reserved names that contain a hyphen but may not be defined as custom elements.
_RESERVED_ELEMENT_NAMES = frozenset(
    {
        "annotation-xml",
        "color-profile",
        "font-face",
        "font-face-src",
        "font-face-uri",
        "font-face-format",
        "font-face-name",
        "missing-glyph",
    }
)
_CUSTOM_ELEMENT = re.compile(r"^[a-z][a-z0-9._]*-[a-z0-9._-]*$")


def _listing(values: tuple[str, ...]) -> str:
    return ", ".join(values)


def name_problem(value: str) -> str | None:
    """Rule 1: `tag` and `scope` are letters, digits, hyphens and underscores only."""
    return None if NAME_PATTERN.fullmatch(value) else NAME_RULE


def bucket_problem(name: Any) -> str | None:
    """S3-style bucket naming: 3–63 characters of lowercase letters, digits, dots and hyphens,
    starting and ending with a letter or digit, no two adjacent dots, not shaped like an IP address."""
    if not isinstance(name, str) or not name:
        return "is required: a bucket name"
    if not 3 <= len(name) <= 63:
        return "must be a valid bucket name of 3 to 63 characters"
    if not _BUCKET.fullmatch(name) or ".." in name:
        return (
            "must be a valid bucket name: lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit, no '..'"
        )
    try:
        ipaddress.IPv4Address(name)
    except ValueError:
        return None
    return "must be a valid bucket name, not an IP address"


def key_problem(key: Any) -> str | None:
    """Object keys: 1 to 1024 bytes of UTF-8 without control characters, `/`-separated names none of
    which is empty, `.` or `..`: the store keeps `<bucket>/<key>` as one name, and such a key would
    point outside its bucket or at another key (refused at write, not only when read)."""
    if not isinstance(key, str) or not key:
        return "is required: an object key"
    if len(key.encode("utf-8", errors="surrogatepass")) > 1024:
        return "must be a valid object key of at most 1024 bytes (UTF-8)"
    if _CONTROL.search(key):
        return "must be a valid object key without control characters"
    if any(part in ("", ".", "..") for part in key.split("/")):
        return "must be names separated by single slashes, none of them . or .. (no leading, trailing or double slash)"
    return None


def _url_problem(url: Any) -> str | None:
    if not isinstance(url, str) or not url.strip():
        return "must be an http or https URL"
    if len(url) > 2000 or any(ch.isspace() for ch in url):
        return "must be an http or https URL without spaces, at most 2000 characters"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "must be an http or https URL"
    return None


_LOCATION_RULE = "is required for a web-component widget: an object with one location (store, storeBucket and storeKey, or url)"
_ELEMENT_RULE = "must be a valid custom element name: lowercase, starting with a letter and containing a hyphen (e.g. my-widget)"
# The widget (docs/widgets.md, "Widget kinds"): what the field documents and checks. The location
# rules (exactly one; bucket and key names; the URL) are _check_location's; other keys are kept.
WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Widget: `type` built-in | custom-compiled-in | web-component | pass-through, plus "
    "`builtInType` (built-in) or `webComponent` (web-component).",
    "properties": {
        "type": {
            "type": "string",
            "enum": list(WIDGET_TYPES),
            "x-messages": {
                "type": f"invalid widget type {{value}}: the allowed types are {_listing(WIDGET_TYPES)}",
                "enum": f"invalid widget type {{value}}: the allowed types are {_listing(WIDGET_TYPES)}",
                "required": f"is required: one of {_listing(WIDGET_TYPES)}",
            },
        },
    },
    "required": ["type"],
    "allOf": [
        {
            "if": {"properties": {"type": {"const": WidgetType.BUILT_IN}}, "required": ["type"]},
            "then": {
                "properties": {
                    "builtInType": {
                        "enum": list(BUILT_IN_TYPES),
                        "x-messages": {
                            "enum": f"{{value}} is not a built-in widget type: must be one of {_listing(BUILT_IN_TYPES)}",
                            "required": f"is required for a built-in widget: one of {_listing(BUILT_IN_TYPES)}",
                        },
                    }
                },
                "required": ["builtInType"],
            },
        },
        {
            "if": {"properties": {"type": {"const": WidgetType.WEB_COMPONENT}}, "required": ["type"]},
            "then": {
                "properties": {
                    "webComponent": {
                        "type": "object",
                        "description": "store {storeBucket, storeKey}, storeBucket and storeKey, or url; and the element's tag name.",
                        "properties": {
                            "store": {"type": "object", "x-messages": {"type": "must be an object {storeBucket, storeKey}"}},
                            "encoding": {"enum": list(ENCODINGS)},
                            "customElementName": {
                                "type": "string",
                                "pattern": _CUSTOM_ELEMENT.pattern.removesuffix("$") + r"\Z",  # \Z: $ would pass a final newline
                                "not": {"enum": sorted(_RESERVED_ELEMENT_NAMES)},
                                "x-messages": dict.fromkeys(("type", "pattern", "not"), _ELEMENT_RULE),
                            },
                        },
                        "x-messages": dict.fromkeys(("type", "required"), _LOCATION_RULE),
                    }
                },
                "required": ["webComponent"],
            },
        },
    ],
    "additionalProperties": True,  # other keys are kept as sent (docs/widgets.md)
    "x-messages": {"type": "must be an object with a type"},
}
_WIDGET = Shape(WIDGET_SCHEMA)


def clean_widget(value: Any) -> dict[str, Any]:
    """The widget type and its variants (docs/widgets.md, "Widget kinds")."""
    widget = dict(value) if isinstance(value, dict) else value
    if isinstance(widget, dict) and isinstance(widget.get("webComponent"), dict):
        # A null is the same as an absent key: clients often send every field.
        widget["webComponent"] = {key: item for key, item in widget["webComponent"].items() if item is not None}
    try:
        _WIDGET.check(widget)
    except ShapeError as fault:
        raise error_at(fault.parts, fault.message) from None
    if widget["type"] == WidgetType.WEB_COMPONENT:
        _check_location(widget["webComponent"])
    return widget


def _check_location(component: dict[str, Any]) -> None:
    """Exactly one location, and its names valid (docs/widgets.md, "Widget kinds")."""
    path: tuple[str, ...] = ("webComponent",)
    locations = [
        name
        for name, present in (
            ("store", "store" in component),
            ("storeBucket/storeKey", "storeBucket" in component or "storeKey" in component),
            ("url", "url" in component),
        )
        if present
    ]
    if len(locations) != 1:
        given = f" (given: {', '.join(locations)})" if locations else ""
        raise error_at(path, f"must give exactly one location: store {{storeBucket, storeKey}}, storeBucket and storeKey, or url{given}")
    if "store" in component:
        _check_store(component["store"], (*path, "store"))
    elif "url" in component:
        problem = _url_problem(component["url"])
        if problem:
            raise error_at((*path, "url"), problem)
    else:
        _check_store(component, path)


def _check_store(store: dict[str, Any], path: tuple[str, ...]) -> None:
    """Rule 5: object-storage bucket and key are valid names."""
    problem = bucket_problem(store.get("storeBucket"))
    if problem:
        raise error_at((*path, "storeBucket"), problem)
    problem = key_problem(store.get("storeKey"))
    if problem:
        raise error_at((*path, "storeKey"), problem)


def clean_rendering_contexts(value: Any) -> dict[str, dict[str, Any]]:
    """Both shapes in, one out: the object form `{"inline": {"enabled": true}, ...}`
    (a boolean `x` becomes `{"enabled": x}`), keys in the documented order."""
    if not isinstance(value, dict):
        raise error_at((), f"must be an object keyed by rendering context ({_listing(RENDERING_CONTEXTS)})")
    unknown = [key for key in value if key not in RENDERING_CONTEXTS]
    if unknown:
        raise error_at((unknown[0],), f"unknown rendering context: the allowed ones are {_listing(RENDERING_CONTEXTS)}")
    cleaned: dict[str, dict[str, Any]] = {}
    for name in RENDERING_CONTEXTS:
        if name not in value:
            continue
        config = value[name]
        if isinstance(config, bool):
            cleaned[name] = {"enabled": config}
            continue
        if not isinstance(config, dict):
            raise error_at((name,), "must be true, false, or an object with enabled and the context's options")
        enabled = config.get("enabled")
        if not isinstance(enabled, bool):
            raise error_at((name, "enabled"), "is required: true or false")
        options = {key: item for key, item in config.items() if key != "enabled" and item is not None}
        if name in _CONTEXT_OPTIONS:
            _check_options(name, options)
        cleaned[name] = {"enabled": enabled, **options}
    return cleaned


def _css_length_pattern() -> str:
    """CSS lengths and calc()/min()/max()/clamp(), spaces around allowed: one pattern for the schema."""
    bodies = [regex.pattern.removeprefix("^").removesuffix("$") for regex in (_CSS_LENGTH, _CSS_FUNCTION)]
    return rf"^\s*(?:{'|'.join(bodies)})\s*$"


_PIXELS_RULE = "must be a number of pixels of at least 0"
_LENGTH_RULE = "must be a CSS length string such as '320px', '50%' or '20rem'"
_LENGTH: dict[str, Any] = {
    "type": "string",
    "nullable": True,
    "pattern": _css_length_pattern(),
    "x-messages": {"type": _LENGTH_RULE, "pattern": _LENGTH_RULE},
}
_PIXELS: dict[str, Any] = {"type": "number", "nullable": True, "minimum": 0, "x-messages": {"type": _PIXELS_RULE, "minimum": _PIXELS_RULE}}
_SIZING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {**{key: _LENGTH for key in _SIZING_LENGTHS}, **{key: _PIXELS for key in _SIZING_PIXELS}},
    "additionalProperties": False,
    "x-messages": {
        "type": "must be an object (width, height, minWidth, maxWidth, minHeight, maxHeight)",
        "additionalProperties": f"unknown sizing option: the allowed ones are {_listing(_SIZING_LENGTHS + _SIZING_PIXELS)}",
    },
}
_OPTION_SCHEMAS: dict[str, dict[str, Any]] = {
    _BOOLEAN: {"type": "boolean", "x-messages": {"type": "must be true or false"}},
    _NUMBER: {"type": "number"},
    _NON_NEGATIVE: {"type": "number", "minimum": 0},
    _SIZING: _SIZING_SCHEMA,
}
# The options of each context that has a fixed set (docs/widgets.md), as schemas (chatplatform.jsonshape).
CONTEXT_OPTIONS_SCHEMAS: dict[str, dict[str, Any]] = {
    context: {
        "type": "object",
        "properties": {key: _OPTION_SCHEMAS[kind] for key, kind in options.items()},
        "additionalProperties": False,
        "x-messages": {"additionalProperties": f"unknown {context} option: the allowed ones are enabled, {_listing(tuple(options))}"},
    }
    for context, options in _CONTEXT_OPTIONS.items()
}
_CONTEXT_OPTIONS_SHAPES = {context: Shape(schema) for context, schema in CONTEXT_OPTIONS_SCHEMAS.items()}


def _check_options(context: str, options: dict[str, Any]) -> None:
    try:
        _CONTEXT_OPTIONS_SHAPES[context].check(options)
    except ShapeError as fault:
        raise error_at((context, *fault.parts), fault.message) from None
    sizing = options.get("sizing")
    if isinstance(sizing, dict):
        low, high = sizing.get("minHeight"), sizing.get("maxHeight")
        if is_number(low) and is_number(high) and low > high:
            raise error_at((context, "sizing", "minHeight"), "must not be greater than maxHeight")


_LINE_RULE = "must be an object {type: 'line', text}"
_ITEM_RULE = "must be an object {type: 'line', text} or {type: 'block', title, lines}"


def _non_empty(rule: str) -> dict[str, Any]:
    return {"type": "string", "pattern": r"\S", "x-messages": dict.fromkeys(("type", "pattern", "required"), rule)}


def _when_type(kind: str, properties: dict[str, Any]) -> dict[str, Any]:
    """Item keys required when the item's `type` is `kind`."""
    return {
        "if": {"properties": {"type": {"const": kind}}, "required": ["type"]},
        "then": {"properties": properties, "required": list(properties)},
    }


_LINE_TEXT = _non_empty("is required for a line: a non-empty string")
# TagInstructionForLlm items (docs/api.md, "Tag definitions"): what the field documents and checks.
INSTRUCTION_ITEMS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "description": "Structured instructions: `{type: 'line', text}` or `{type: 'block', title, lines: [{type: 'line', text}]}`.",
    "items": {
        "type": "object",
        "properties": {
            "type": {
                "type": "string",
                "enum": ["line", "block"],
                "x-messages": dict.fromkeys(("type", "enum", "required"), "must be 'line' or 'block'"),
            },
        },
        "required": ["type"],
        "allOf": [
            _when_type("line", {"text": _LINE_TEXT}),
            _when_type(
                "block",
                {
                    "title": _non_empty("is required for a block: a non-empty string"),
                    "lines": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "allOf": [  # before `required`: a line of another type says so, not that it lacks a text
                                {
                                    "if": {"properties": {"type": {"const": "line"}}, "required": ["type"]},
                                    "else": {"not": {}, "x-messages": {"not": _LINE_RULE}},
                                }
                            ],
                            "properties": {"text": _LINE_TEXT},
                            "required": ["text"],
                            "x-messages": {"type": _LINE_RULE},
                        },
                        "x-messages": dict.fromkeys(("type", "required"), "is required for a block: a list of {type: 'line', text}"),
                    },
                },
            ),
        ],
        "x-messages": {"type": _ITEM_RULE},
    },
    "x-messages": {"type": "must be a list of instruction items ({type: 'line', text} or {type: 'block', title, lines})"},
}
_INSTRUCTION_ITEMS = Shape(INSTRUCTION_ITEMS_SCHEMA)


def clean_instruction_items(value: Any) -> list[dict[str, Any]]:
    """TagInstructionForLlm items, checked against INSTRUCTION_ITEMS_SCHEMA; texts and titles trimmed."""
    try:
        _INSTRUCTION_ITEMS.check(value)
    except ShapeError as fault:
        raise error_at(fault.parts, fault.message) from None
    return [
        {"type": "line", "text": item["text"].strip()}
        if item["type"] == "line"
        else {
            "type": "block",
            "title": item["title"].strip(),
            "lines": [{"type": "line", "text": line["text"].strip()} for line in item["lines"]],
        }
        for item in value
    ]
