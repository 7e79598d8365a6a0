"""A tool function's arguments: its ParameterDefinitions as the JSON Schema the model is given, and
the check of a call's arguments against it (docs/api.md, "Tools in a turn"). A mismatch is a
ToolError naming each argument and its rule, which the model reads as the tool's result.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tools.executors import ToolError

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

_MAX_REPORTED_ERRORS = 10


def truncated_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _parameter_schema(definition: Mapping[str, Any]) -> dict[str, Any]:
    kind = definition.get("type")
    schema: dict[str, Any] = {}
    if kind in ("string", "number", "boolean", "object", "array"):
        schema["type"] = kind
    if isinstance(definition.get("description"), str) and definition["description"]:
        schema["description"] = definition["description"]
    if kind == "string" and isinstance(definition.get("enum"), list) and definition["enum"]:
        schema["enum"] = list(definition["enum"])
    if kind == "array" and isinstance(definition.get("items"), Mapping):
        schema["items"] = _parameter_schema(definition["items"])
    if kind == "object":
        schema.update(_object_schema(definition.get("properties")))
    return schema


def _object_schema(parameters: Any) -> dict[str, Any]:
    parameters = parameters if isinstance(parameters, Mapping) else {}
    definitions = {name: value for name, value in parameters.items() if isinstance(value, Mapping)}
    return {
        "properties": {name: _parameter_schema(value) for name, value in definitions.items()},
        "required": [name for name, value in definitions.items() if value.get("required") is True],
        "additionalProperties": False,
    }


def parameters_json_schema(function: Mapping[str, Any]) -> dict[str, Any]:
    """FunctionDefinition.parameters → the JSON Schema of the tool's arguments object."""
    return {"type": "object", **_object_schema(function.get("parameters"))}


@functools.lru_cache(maxsize=1024)
def _validator(schema_json: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


def _without_optional_nulls(value: Any, schema: Mapping[str, Any]) -> Any:
    """Models often send `null` for an optional parameter they mean to leave out."""
    if not isinstance(value, dict) or schema.get("type") != "object":
        if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            return [_without_optional_nulls(item, schema["items"]) for item in value]
        return value
    properties, required = schema.get("properties", {}), set(schema.get("required", ()))
    return {
        key: _without_optional_nulls(item, properties.get(key, {}))
        for key, item in value.items()
        if not (item is None and key not in required)
    }


_JSON_TYPES = {"string": "a string", "number": "a number", "boolean": "true or false", "object": "an object", "array": "an array"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _messages(error: ValidationError, function: str) -> list[str]:
    here = _path(error.absolute_path)
    where = f"argument '{here}'" if here else "arguments"

    def child(name: str) -> str:
        return f"argument '{_path([*error.absolute_path, name])}'"

    if error.validator == "required":
        missing = [name for name in error.validator_value if isinstance(error.instance, dict) and name not in error.instance]
        return [f"{child(name)}: is required" for name in missing]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(error.schema.get("properties", {}))  # sorted: jsonb (PostgreSQL) does not keep key order
        owner = f"of {function}" if not here else f"of '{here}'"
        allowed = f" (allowed: {', '.join(known)})" if known else " (it takes none)"
        return [f"{child(name)}: is not a parameter {owner}{allowed}" for name in error.instance if name not in known]
    if error.validator == "type":
        expected = _JSON_TYPES.get(str(error.validator_value), str(error.validator_value))
        if not here:
            return [f"arguments: must be {expected}, got {_json_type(error.instance)}"]
        return [f"{where}: must be {expected}, got {_json_type(error.instance)}"]
    if error.validator == "enum":
        allowed = ", ".join(json.dumps(value) for value in error.validator_value)
        return [f"{where}: must be one of {allowed}, got {truncated_text(json.dumps(error.instance, default=str), 80)}"]
    return [f"{where}: {error.message}"]


def check_arguments(function: str, schema: Mapping[str, Any], arguments: Any) -> dict[str, Any]:
    """The arguments to run with (optional nulls removed); ToolError naming each broken rule."""
    arguments = _without_optional_nulls(arguments, schema)
    validator = _validator(json.dumps(schema))
    errors = sorted(validator.iter_errors(arguments), key=lambda e: (list(map(str, e.absolute_path)), str(e.validator)))
    if not errors:
        return arguments
    messages = [message for error in errors for message in _messages(error, function)]
    shown = messages[:_MAX_REPORTED_ERRORS] + (
        [f"and {len(messages) - _MAX_REPORTED_ERRORS} more"] if len(messages) > _MAX_REPORTED_ERRORS else []
    )
    raise ToolError(f"invalid arguments for {function}: {'; '.join(shown)}. Nothing was run; correct the arguments and call again.")
