"""The rules of a tool definition (docs/api.md, "Tools", "Limits").

`clean_tool` is the one place they live: the Admin API and the Django admin form both reach it
through tools.services, so a rule enforced in one is enforced in the other. It works on the API's
wire shape (camelCase) of a *whole* definition (an update is merged onto the stored one first) and
reports every broken rule at once, each naming its field path (`functionSchema[0].parameters.city.type`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, time
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from chatplatform.access import InvalidCondition, compile_condition
from chatplatform.api.errors import InvalidRequest
from chatplatform.jsonshape import Shape, is_number
from tools.function_refs import FunctionRefError, check_function_arn
from tools.inline_code import InvalidCode, check_function_expression
from tools.models import ExecutionType, LifecycleStatus
from tools.schema import (
    AUTH_FIELDS,
    COMMON_FIELDS,
    MAX_URL_LENGTH,
    NAME_MAX_LENGTH,
    NAME_PATTERN,
    SUPPORTED_AGENT_FRAMEWORKS,
    TOOL_SCHEMA,
    VARIANT_FIELDS,
)

DEFAULT_EXECUTION_TIMEOUT = 30
MAX_VERSION = 2_147_483_647
REDACTED = "********"  # what responses show instead of a secret; sent back, it keeps the stored one
_TOOL_ID = re.compile(r"(?P<name>.+)@(?P<version>[1-9][0-9]{0,9})")  # MAX_VERSION has 10 digits


class Issue(NamedTuple):
    field: str  # wire path inside the tool, "" for the tool itself
    message: str


class ToolInvalid(InvalidRequest):
    """400 INVALID_REQUEST listing every broken rule as `tool.<field>: <rule>`; `issues` keeps them
    apart for the Django admin form."""

    def __init__(self, issues: Iterable[Issue]) -> None:
        self.issues = list(issues)
        super().__init__(
            "; ".join(f"tool.{issue.field}: {issue.message}" if issue.field else f"tool: {issue.message}" for issue in self.issues)
        )


def parse_tool_id(tool_id: str) -> tuple[str, int]:
    """`<name>@<version>` → (name, version); ValueError saying what is wrong."""
    match = _TOOL_ID.fullmatch(tool_id)
    if match is None:
        raise ValueError("must have the form <name>@<version> with a positive whole version, e.g. weather@2")
    name, version = match["name"], int(match["version"])
    if version > MAX_VERSION:
        raise ValueError(f"version must be at most {MAX_VERSION}")
    if len(name) > NAME_MAX_LENGTH or not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"the part before @ must follow the tool name rule ({NAME_PATTERN.pattern}, at most {NAME_MAX_LENGTH} characters)")
    return name, version


def _is_http_url(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > MAX_URL_LENGTH or any(ch.isspace() for ch in value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:  # a malformed port or IPv6 literal
        return False
    return parts.scheme in {"http", "https"} and bool(parts.hostname)


def parse_iso8601(value: Any) -> datetime | None:
    """A timestamp or a date (midnight UTC); naive timestamps are UTC. None when not ISO 8601."""
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    try:
        parsed = parse_datetime(value)
        if parsed is None:
            day = parse_date(value)
            parsed = datetime.combine(day, time.min) if day else None
    except ValueError:  # well-formed but impossible, e.g. 2026-02-30
        return None
    if parsed is None:
        return None
    return parsed if timezone.is_aware(parsed) else parsed.replace(tzinfo=UTC)


_TOOL_SHAPE = Shape(TOOL_SCHEMA)


def _shape_issues(data: Mapping[str, Any]) -> list[Issue]:
    """The first fault at each place (a too-long name is not also said not to match the pattern)."""
    issues: dict[str, Issue] = {}
    for fault in _TOOL_SHAPE.errors(data):
        issues.setdefault(fault.path, Issue(fault.path, fault.message))
    return list(issues.values())


_OBJECTS = ("lifecycle", "approval", "auth")


def _without_nulls(value: Any) -> Any:
    return {key: item for key, item in value.items() if item is not None} if isinstance(value, Mapping) else value


def clean_tool(data: Any, *, previous_status: str | None = None, verified_function_arn: str | None = None) -> dict[str, Any]:
    """The whole definition, checked and normalised (defaults filled in, `version` from `toolId`,
    `lifecycle.deprecationDate` a datetime); ToolInvalid naming every broken rule otherwise.

    `previous_status` is the stored lifecycle status (transitions); `verified_function_arn` an AWS
    ARN already verified when stored, which is then not asked of AWS again.
    """
    if not isinstance(data, Mapping):
        raise ToolInvalid([Issue("", "must be an object")])
    # null is the same as absent, in the tool and in its objects (the admin form sends every field)
    data = {key: _without_nulls(value) if key in _OBJECTS else value for key, value in data.items() if value is not None}
    issues = _shape_issues(data)
    faulty = {issue.field.split(".")[0].split("[")[0] for issue in issues}

    def fail(field: str, message: str) -> None:
        issues.append(Issue(field, message))

    def sound(field: str) -> bool:
        """Present and of the right shape: the rules beyond the shape apply."""
        return field in data and field not in faulty

    version: int | None = None
    if sound("toolId"):
        try:
            _, version = parse_tool_id(data["toolId"])
        except ValueError as exc:
            fail("toolId", str(exc))
    sent_version = data.get("version")
    if version is not None and sent_version is not None and (not is_number(sent_version) or sent_version != version):
        fail("version", f"must equal the version after @ in toolId ({version}); it is set from toolId")

    functions = data.get("functionSchema", []) if sound("functionSchema") else []
    seen: set[str] = set()
    for index, function in enumerate(functions):
        if function["name"] in seen:
            name = function["name"]
            fail(f"functionSchema[{index}].name", f"{name!r} is already the name of another function of this tool; names must be unique")
        seen.add(function["name"])

    lifecycle: dict[str, Any] = {"status": LifecycleStatus.ACTIVE}
    if sound("lifecycle"):
        lifecycle = {"status": data["lifecycle"]["status"]}
        if previous_status == LifecycleStatus.RETIRED and lifecycle["status"] != LifecycleStatus.RETIRED:
            # Retired is final (docs/api.md, "Tools"; docs/decisions.md, "Tools").
            fail("lifecycle.status", "a retired tool cannot be reactivated; create a new version")
        if data["lifecycle"].get("deprecationDate") is not None:
            lifecycle["deprecationDate"] = parse_iso8601(data["lifecycle"]["deprecationDate"])
            if lifecycle["deprecationDate"] is None:
                fail("lifecycle.deprecationDate", "must be an ISO 8601 date or timestamp")
        if data["lifecycle"].get("migrationPath"):
            lifecycle["migrationPath"] = data["lifecycle"]["migrationPath"]

    rules = data["accessRules"] if sound("accessRules") else []
    conditions = [(f"accessRules[{index}].condition", rule.get("condition")) for index, rule in enumerate(rules)]
    if sound("approval") and isinstance(data["approval"]["required"], str):
        conditions.append(("approval.required", data["approval"]["required"]))
    for field, condition in conditions:
        if condition is not None and condition.strip():
            try:
                compile_condition(condition)
            except InvalidCondition as exc:
                fail(field, str(exc))

    execution_type = data.get("executionType") if "executionType" not in faulty else None
    for other_type, fields in VARIANT_FIELDS.items():
        for field in fields if execution_type is not None and other_type != execution_type else ():
            # Refused rather than silently dropped: a stray field usually means a wrong executionType.
            if data.get(field) not in (None, ""):
                fail(field, f"belongs to {other_type} tools and is not allowed when executionType is {execution_type}")
    if execution_type == ExecutionType.FUNCTION and sound("functionArn"):
        try:
            check_function_arn(data["functionArn"], verify_remote=data["functionArn"] != verified_function_arn)
        except FunctionRefError as exc:
            fail("functionArn", str(exc))
    elif execution_type == ExecutionType.MCP:
        if sound("url") and not _is_http_url(data["url"]):
            fail("url", "must be an http or https URL")
        auth = data.get("auth") if sound("auth") else None
        if auth is not None and auth["clientSecret"] == REDACTED:
            fail("auth.clientSecret", f"must be the secret itself; {REDACTED} only keeps a secret already stored")
        if auth is not None and not _is_http_url(auth["tokenUrl"]):
            fail("auth.tokenUrl", "must be an http or https URL")
    elif execution_type == ExecutionType.INLINE and sound("code"):
        try:
            check_function_expression(data["code"])
        except InvalidCode as exc:
            fail("code", str(exc))

    if issues:
        raise ToolInvalid(issues)
    out = {field: data.get(field) for field in (*COMMON_FIELDS, *VARIANT_FIELDS.get(execution_type or "", ()))}
    if out.get("auth") is not None:
        out["auth"] = {key: out["auth"][key] for key in AUTH_FIELDS}
    if out["approval"] is not None:
        roles = out["approval"].get("approverRoles")
        out["approval"] = {
            "required": out["approval"]["required"],
            "timeoutSeconds": out["approval"].get("timeoutSeconds", 86400),
            **({"approverRoles": list(roles)} if roles else {}),
        }
    return {
        **out,
        "version": version,
        "supportedAgentFrameworks": list(SUPPORTED_AGENT_FRAMEWORKS),
        "executionTimeout": data.get("executionTimeout", DEFAULT_EXECUTION_TIMEOUT),
        "tags": dict(data.get("tags", {})),
        "lifecycle": lifecycle,
        "functionSchema": list(functions),
        "accessRules": list(data["accessRules"]) if "accessRules" in data else None,
    }
