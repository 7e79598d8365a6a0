"""JSON documents inside records (a chat app's features, user roles, ...) checked against their
schema by one maintained library (jsonschema), with one error renderer: the first fault as
`path: rule`, e.g. `tags.tagsEnabled[0].scope: is required and must be a non-empty string`.

The schema given is the one the OpenAPI document shows (drf-spectacular writes OpenAPI 3.0, hence
`nullable`), so what is documented is what is checked (docs/decisions.md, "JSON shapes"). A schema
node may say its own rule for a keyword with `x-messages` (an OpenAPI extension, ignored by
validators): `{"type": "array", "x-messages": {"type": "must be a list of {tag, scope}"}}`. Under
`items`, `properties` or `additionalProperties`, the node's message also covers any fault inside,
reported at the node's own path ("must be a list of non-empty strings"). A message may quote the
faulty value with `{value}` (its Python repr: "invalid widget type {value}" → `'fancy'`).

Plain Python with no Django imports: the leaf apps and chatplatform use it alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any, TypeGuard

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError


def is_number(value: Any) -> TypeGuard[int | float]:
    """A JSON number as the platform's rules mean it: an int or a finite float, never a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# JSON Schema's integer takes 1.0 and its number takes NaN and infinities (Python's json reads
# them); the platform's rules say a whole number is an int and a number is finite, neither a bool.
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many(
    {
        "integer": lambda checker, value: isinstance(value, int) and not isinstance(value, bool),
        "number": lambda checker, value: is_number(value),
    }
)
_Validator = validators.extend(Draft202012Validator, type_checker=_TYPES)

_PHRASES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "boolean": "a boolean",
    "integer": "a whole number",
    "number": "a number",
}
_INSTANCE_STEPS = {"properties", "patternProperties", "additionalProperties", "items", "prefixItems"}
_BRANCHES = ("anyOf", "oneOf")


class ShapeError(ValueError):
    """A document that breaks its schema: `parts` lead to the fault inside the document (`()` for the
    whole), `path` writes them out (`tags.tagsEnabled[0]`), `message` is the rule."""

    def __init__(self, parts: tuple[str | int, ...], message: str) -> None:
        self.parts = parts
        self.path = join_path(parts)
        self.message = message
        super().__init__(f"{self.path}: {message}" if self.path else message)


def join_path(parts: Iterable[str | int]) -> str:
    """`("tags", "tagsEnabled", 0, "tag")` → `tags.tagsEnabled[0].tag`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class Shape:
    """A compiled schema: `Shape(schema).check(document)` raises ShapeError naming the first fault."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._validator = _Validator(_json_schema(schema))

    def check(self, document: Any) -> None:
        error = _first(self._validator.iter_errors(document), document)
        if error is not None:
            raise ShapeError(*_render(error, self._validator.schema))

    def errors(self, document: Any) -> list[ShapeError]:
        """Every fault, one per failing place (for forms that show them all)."""
        return [ShapeError(*_render(_leaf(error), self._validator.schema)) for error in self._validator.iter_errors(document)]


def _json_schema(schema: Any, memo: dict[int, Any] | None = None) -> Any:
    """OpenAPI 3.0's `nullable` as JSON Schema's `null` type (a copy; the OpenAPI schema stays).
    A node shared by several parents (a recursive shape unrolled to a depth) is copied once."""
    memo = {} if memo is None else memo
    if id(schema) in memo:
        return memo[id(schema)]
    if isinstance(schema, list):
        return [_json_schema(item, memo) for item in schema]
    if not isinstance(schema, dict):
        return schema
    node = {key: (value if key.startswith("x-") else _json_schema(value, memo)) for key, value in schema.items()}
    memo[id(schema)] = node = _nullable(node)
    return node


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    if node.pop("nullable", False):
        if "type" in node:
            types = node["type"] if isinstance(node["type"], list) else [node["type"]]
            node["type"] = [*types, "null"]
            if "enum" in node and None not in node["enum"]:
                node["enum"] = [*node["enum"], None]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


def _first(errors: Iterable[ValidationError], document: Any) -> ValidationError | None:
    """The fault to report: the shallowest (a document that is not an object says so before its keys)."""
    found = sorted(errors, key=lambda error: len(error.absolute_path))
    return _leaf(found[0]) if found else None


def _type_matches(branch: Any, instance: Any) -> bool:
    if not isinstance(branch, dict) or "type" not in branch:
        return True
    types = branch["type"] if isinstance(branch["type"], list) else [branch["type"]]
    return any(_TYPES.is_type(instance, kind) for kind in types)


def _leaf(error: ValidationError) -> ValidationError:
    """For a failed anyOf/oneOf, the fault inside the branches of the instance's type, when there
    is one: `{"label": 3}` against string-or-object is "label: must be a string", not "must be a
    string or an object". A fault that has its own message in the schema is preferred."""
    if error.validator not in _BRANCHES or not error.context:
        return error
    branches = error.validator_value
    inside = [c for c in error.context if _type_matches(branches[c.relative_schema_path[0]], error.instance)]
    if not inside:
        return error
    inside.sort(key=lambda c: (not _has_message(c), len(c.absolute_path)))
    return _leaf(inside[0])


def _has_message(error: ValidationError) -> bool:
    return isinstance(error.schema, dict) and error.validator in error.schema.get("x-messages", {})


def _render(error: ValidationError, root: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    """(path, rule) of one fault. An ancestor's `x-messages` over a keyword the fault lies under wins."""
    path: list[str | int] = list(error.absolute_path)
    steps: Sequence[Any] = list(error.absolute_schema_path)
    node: Any = root
    depth = 0  # how much of the instance path the walk has consumed
    for index, step in enumerate(steps):
        if not isinstance(node, dict | list):
            break
        last = index == len(steps) - 1
        if isinstance(node, dict) and isinstance(step, str):
            own = node.get("x-messages", {}).get(step)
            if own is not None and (last or step in _INSTANCE_STEPS):
                return (*path[:depth], *_extra(error, last)), own.replace("{value}", repr(error.instance))
            if step in ("items", "additionalProperties") or (index > 0 and steps[index - 1] in ("properties", "patternProperties")):
                depth += 1
        node = node[step] if isinstance(node, list) or step in node else None
    return (*path, *_extra(error, True)), _default_rule(error)


def _extra(error: ValidationError, at_failure: bool) -> tuple[str, ...]:
    """The key a `required` or `additionalProperties` fault is about, appended to the path."""
    key = _named_key(error) if at_failure else None
    return () if key is None else (key,)


def _named_key(error: ValidationError) -> str | None:
    if error.validator == "required":
        return next((key for key in error.validator_value if key not in error.instance), None)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = set(error.schema.get("properties", {}))
        return next((key for key in error.instance if key not in known), None)
    return None


def _type_phrase(schema: Any) -> str:
    if not isinstance(schema, dict) or "type" not in schema:
        return ""
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    phrases = [_PHRASES[kind] for kind in types if kind in _PHRASES]
    if phrases == ["a string"] and schema.get("minLength") == 1:
        phrases = ["a non-empty string"]
    return " or ".join(phrases)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _default_rule(error: ValidationError) -> str:
    kind, expected, schema = error.validator, error.validator_value, error.schema
    if kind == "type":
        bounds = [
            f"at least {schema['minimum']}" if "minimum" in schema else "",
            f"at most {schema['maximum']}" if "maximum" in schema else "",
        ]
        return f"must be {_type_phrase(schema)}" + "".join(f" of {bound}" for bound in bounds if bound)
    if kind == "required":
        key = _named_key(error)
        prop = schema.get("properties", {}).get(key)
        own = prop.get("x-messages", {}).get("required") if isinstance(prop, dict) else None
        if own is not None:  # a property may word its own absence
            return str(own)
        phrase = _type_phrase(prop)
        return f"is required and must be {phrase}" if phrase else "is required"
    if kind == "enum":
        return "must be one of " + ", ".join(_value(item) for item in expected if item is not None)
    if kind == "const":
        return f"must be {_value(expected)}"
    if kind in ("minimum", "maximum"):
        bound = "at least" if kind == "minimum" else "at most"
        phrase = _type_phrase({"type": [t for t in _as_list(schema.get("type")) if t != "null"]})
        return f"must be {phrase or 'a number'} of {bound} {expected}"
    if kind == "minLength":
        return "must not be empty" if expected == 1 else f"must be at least {expected} characters"
    if kind == "maxLength":
        return f"must be at most {expected} characters"
    if kind == "minItems":
        return f"must hold at least {expected} items"
    if kind == "maxItems":
        return f"must hold at most {expected} items"
    if kind == "uniqueItems":
        return "must not repeat an item"
    if kind == "pattern":
        return f"must match {expected}"
    if kind == "additionalProperties":
        path = list(error.absolute_path)
        owner = path[-1] if path and isinstance(path[-1], str) else "the object"
        return f"is not a field of {owner} (fields: {', '.join(schema.get('properties', {}))})"
    if kind in _BRANCHES:
        phrases = [_type_phrase(branch) for branch in expected]
        return "must be " + " or ".join(p for p in phrases if p) if all(phrases) else "does not match any allowed shape"
    return error.message


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]
