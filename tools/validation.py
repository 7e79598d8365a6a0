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
from chatplatform.api.fields import ACCESS_RULES_SHAPE
from chatplatform.jsonshape import is_number, join_path
from tools.function_refs import FunctionRefError, check_function_arn
from tools.inline_code import InvalidCode, check_function_expression
from tools.models import ExecutionType, LifecycleStatus, TestType

NAME_PATTERN = re.compile(r"([0-9a-zA-Z][_-]?){1,100}")  # docs/api.md, "Limits"; matched whole (fullmatch)
NAME_MAX_LENGTH = 100  # docs/api.md, "Limits": the pattern alone would allow 200
DISPLAY_NAME_MAX_LENGTH = 200
DESCRIPTION_LIMIT = 500  # docs/api.md, "Limits": fewer than 500 characters
DEFAULT_EXECUTION_TIMEOUT = 30
MAX_EXECUTION_TIMEOUT = 900  # a tool call holds a turn open; 15 minutes is the ceiling (also Lambda's)
MAX_VERSION = 2_147_483_647
MAX_PARAMETER_DEPTH = 10
MAX_URL_LENGTH = 2000
SUPPORTED_AGENT_FRAMEWORKS = ["hosted"]
PARAMETER_TYPES = ("string", "number", "boolean", "object", "array")
ACCESS_EFFECTS = ("allow", "deny")
REDACTED = "********"  # what responses show instead of a secret; sent back, it keeps the stored one

COMMON_FIELDS = (
    "toolId",
    "executionType",
    "name",
    "displayName",
    "description",
    "supportedAgentFrameworks",
    "version",
    "executionTimeout",
    "functionSchema",
    "tags",
    "lifecycle",
    "accessRules",
    "approval",
    "testType",
)
VARIANT_FIELDS: dict[str, tuple[str, ...]] = {
    ExecutionType.FUNCTION: ("functionArn",),
    ExecutionType.MCP: ("url", "auth"),
    ExecutionType.INLINE: ("code",),
}
# Set by the service (docs/api.md, "Who may read what": stamps sent by clients are ignored), so a GET result can be sent back.
SERVICE_FIELDS = ("createdBy", "lastModifiedBy", "createdAt", "updatedAt")
KNOWN_FIELDS = frozenset(COMMON_FIELDS + SERVICE_FIELDS + tuple(f for fields in VARIANT_FIELDS.values() for f in fields))

_TOOL_ID = re.compile(r"(?P<name>.+)@(?P<version>[1-9][0-9]{0,9})")  # MAX_VERSION has 10 digits
_FUNCTION_FIELDS = {"name", "description", "parameters"}
_PARAMETER_FIELDS = {"description", "type", "required", "enum", "items", "properties"}
_LIFECYCLE_FIELDS = {"status", "deprecationDate", "migrationPath"}
_APPROVAL_FIELDS = {"required", "timeoutSeconds", "approverRoles"}
MAX_APPROVAL_SECONDS = 30 * 86400
_AUTH_FIELDS = ("clientId", "clientSecret", "tokenUrl")


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


class _Checker:
    """Collects issues so that one response names every broken rule."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def fail(self, field: str, message: str) -> None:
        self.issues.append(Issue(field, message))

    def unknown_keys(self, value: Mapping[str, Any], allowed: Iterable[str], path: str, what: str) -> None:
        for key in value:
            if key not in allowed:
                self.fail(f"{path}.{key}", f"is not a field of {what}")

    def required_text(self, value: Any, field: str, *, max_length: int | None = None) -> str | None:
        if value is None or value == "":
            self.fail(field, "is required")
        elif not isinstance(value, str):
            self.fail(field, "must be a string")
        elif not value.strip():
            self.fail(field, "must not be blank")
        elif max_length is not None and len(value) > max_length:
            self.fail(field, f"must be at most {max_length} characters")
        else:
            return value
        return None

    def name(self, value: Any, field: str) -> str | None:
        text = self.required_text(value, field, max_length=NAME_MAX_LENGTH)
        if text is not None and not NAME_PATTERN.fullmatch(text):
            self.fail(field, f"must match ^{NAME_PATTERN.pattern}$ (letters and digits, each optionally followed by one _ or -)")
            return None
        return text

    def parameter(self, value: Any, path: str, depth: int) -> None:
        if depth > MAX_PARAMETER_DEPTH:
            self.fail(path, f"must not nest deeper than {MAX_PARAMETER_DEPTH} levels")
            return
        if not isinstance(value, Mapping):
            self.fail(path, "must be a parameter definition {description, type, required}")
            return
        self.unknown_keys(value, _PARAMETER_FIELDS, path, "a parameter definition")
        if not isinstance(value.get("description"), str):
            self.fail(f"{path}.description", "is required (a string)")
        kind = value.get("type")
        if kind not in PARAMETER_TYPES:
            self.fail(f"{path}.type", f"must be one of {', '.join(PARAMETER_TYPES)}")
        if not isinstance(value.get("required"), bool):
            self.fail(f"{path}.required", "is required (true or false)")

        enum = value.get("enum")
        if enum is not None:
            if kind != "string":
                self.fail(f"{path}.enum", "is only allowed for type string")
            elif not isinstance(enum, list) or not enum or not all(isinstance(item, str) for item in enum):
                self.fail(f"{path}.enum", "must be a non-empty list of strings")
            elif len(set(enum)) != len(enum):
                self.fail(f"{path}.enum", "must not repeat a value")

        items = value.get("items")
        if kind == "array":
            if items is None:
                self.fail(f"{path}.items", "is required for type array (the parameter definition of each element)")
            else:
                self.parameter(items, f"{path}.items", depth + 1)
        elif items is not None:
            self.fail(f"{path}.items", "is only allowed for type array")

        properties = value.get("properties")
        if kind == "object":
            if not isinstance(properties, Mapping):
                self.fail(f"{path}.properties", "is required for type object (a map of property name to parameter definition)")
            else:
                self.parameters(properties, f"{path}.properties", depth + 1)
        elif properties is not None:
            self.fail(f"{path}.properties", "is only allowed for type object")

    def parameters(self, value: Mapping[str, Any], path: str, depth: int) -> None:
        for key, definition in value.items():
            if not key.strip():
                self.fail(path, "parameter names must not be blank")
            elif len(key) > NAME_MAX_LENGTH:
                self.fail(path, f"parameter names must be at most {NAME_MAX_LENGTH} characters")
            else:
                self.parameter(definition, f"{path}.{key}", depth)

    def function_schema(self, value: Any) -> list[dict[str, Any]]:
        if value is None:
            self.fail("functionSchema", "is required when supportedAgentFrameworks includes hosted")
            return []
        if not isinstance(value, list) or not value:
            self.fail("functionSchema", "must be a non-empty list of function definitions")
            return []
        seen: set[str] = set()
        for index, function in enumerate(value):
            path = f"functionSchema[{index}]"
            if not isinstance(function, Mapping):
                self.fail(path, "must be a function definition {name, description, parameters}")
                continue
            self.unknown_keys(function, _FUNCTION_FIELDS, path, "a function definition")
            name = self.name(function.get("name"), f"{path}.name")
            if name is not None:
                if name in seen:
                    self.fail(f"{path}.name", f"{name!r} is already the name of another function of this tool; names must be unique")
                seen.add(name)
            self.required_text(function.get("description"), f"{path}.description")
            parameters = function.get("parameters")
            if not isinstance(parameters, Mapping):
                self.fail(f"{path}.parameters", "is required (a map of parameter name to parameter definition; {} for none)")
            else:
                self.parameters(parameters, f"{path}.parameters", 1)
        return list(value)

    def lifecycle(self, value: Any, previous_status: str | None) -> dict[str, Any]:
        if value is None:
            value = {"status": LifecycleStatus.ACTIVE}
        if not isinstance(value, Mapping):
            self.fail("lifecycle", "must be an object {status, deprecationDate?, migrationPath?}")
            return {"status": previous_status or LifecycleStatus.ACTIVE}
        self.unknown_keys(value, _LIFECYCLE_FIELDS, "lifecycle", "a tool lifecycle")
        status = value.get("status")
        if status not in LifecycleStatus.values:
            self.fail("lifecycle.status", f"must be one of {', '.join(LifecycleStatus.values)}")
        elif previous_status == LifecycleStatus.RETIRED and status != LifecycleStatus.RETIRED:
            # Retired is final (docs/api.md, "Tools"; docs/decisions.md, "Tools").
            self.fail("lifecycle.status", "a retired tool cannot be reactivated; create a new version")
        out: dict[str, Any] = {"status": status}
        if value.get("deprecationDate") is not None:
            parsed = parse_iso8601(value["deprecationDate"])
            if parsed is None:
                self.fail("lifecycle.deprecationDate", "must be an ISO 8601 date or timestamp")
            out["deprecationDate"] = parsed
        migration_path = value.get("migrationPath")
        if migration_path is not None:
            if not isinstance(migration_path, str):
                self.fail("lifecycle.migrationPath", "must be a string (instructions or a new tool id)")
            elif migration_path:
                out["migrationPath"] = migration_path
        return out

    def access_rules(self, value: Any) -> list[dict[str, Any]] | None:
        """The shape every accessRules field has (chatplatform.api.fields), then each condition's CEL."""
        if value is None:
            return None
        faults = ACCESS_RULES_SHAPE.errors(value)
        for fault in faults:
            self.fail(join_path(("accessRules", *fault.parts)), fault.message)
        if faults:
            return None
        for index, rule in enumerate(value):
            condition = rule.get("condition")
            if condition is not None and condition.strip():
                try:
                    compile_condition(condition)
                except InvalidCondition as exc:
                    self.fail(f"accessRules[{index}].condition", str(exc))
        return list(value)

    def approval(self, value: Any) -> dict[str, Any] | None:
        """`{required: true | "<CEL condition>", timeoutSeconds? (default 86400), approverRoles?: [string]}`."""
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.fail("approval", "must be an object {required, timeoutSeconds?, approverRoles?}")
            return None
        self.unknown_keys(value, _APPROVAL_FIELDS, "approval", "approval")
        required = value.get("required")
        if isinstance(required, str):
            try:
                compile_condition(required)
            except InvalidCondition as exc:
                self.fail("approval.required", str(exc))
        elif not isinstance(required, bool):
            self.fail("approval.required", "is required: true, false, or a CEL condition over user, customData, args and tool")
        timeout = value.get("timeoutSeconds", 86400)
        if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= MAX_APPROVAL_SECONDS:
            self.fail("approval.timeoutSeconds", f"must be a whole number of seconds from 1 to {MAX_APPROVAL_SECONDS}")
        roles = value.get("approverRoles")
        if roles is not None and (not isinstance(roles, list) or not all(isinstance(role, str) and role for role in roles)):
            self.fail("approval.approverRoles", "must be a list of role names")
        return {"required": required, "timeoutSeconds": timeout, **({"approverRoles": list(roles)} if roles else {})}

    def auth(self, value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.fail("auth", "must be an object {clientId, clientSecret, tokenUrl}")
            return None
        for key in value:
            if key == "token":
                self.fail("auth.token", "is managed by the service (the cached access token) and cannot be set")
            elif key not in _AUTH_FIELDS:
                self.fail(f"auth.{key}", "is not a field of auth (clientId, clientSecret, tokenUrl)")
        for key in _AUTH_FIELDS:
            self.required_text(value.get(key), f"auth.{key}", max_length=MAX_URL_LENGTH)
        if value.get("clientSecret") == REDACTED:
            self.fail("auth.clientSecret", f"must be the secret itself; {REDACTED} only keeps a secret already stored")
        if isinstance(value.get("tokenUrl"), str) and value["tokenUrl"] and not _is_http_url(value["tokenUrl"]):
            self.fail("auth.tokenUrl", "must be an http or https URL")
        return {key: value.get(key) for key in _AUTH_FIELDS}


def clean_tool(data: Any, *, previous_status: str | None = None, verified_function_arn: str | None = None) -> dict[str, Any]:
    """The whole definition, checked and normalised (defaults filled in, `version` from `toolId`,
    `lifecycle.deprecationDate` a datetime); ToolInvalid naming every broken rule otherwise.

    `previous_status` is the stored lifecycle status (transitions); `verified_function_arn` an AWS
    ARN already verified when stored, which is then not asked of AWS again.
    """
    if not isinstance(data, Mapping):
        raise ToolInvalid([Issue("", "must be an object")])
    check = _Checker()
    for key in data:
        if key == "handler":
            check.fail("handler", "is a runtime function and is never stored; send the JavaScript source as code")
        elif key not in KNOWN_FIELDS:
            check.fail(key, "is not a field of a tool definition")

    out: dict[str, Any] = {}
    tool_id = check.required_text(data.get("toolId"), "toolId")
    version: int | None = None
    if tool_id is not None:
        try:
            _, version = parse_tool_id(tool_id)
        except ValueError as exc:
            check.fail("toolId", str(exc))
    sent_version = data.get("version")
    if version is not None and sent_version is not None and (not is_number(sent_version) or sent_version != version):
        check.fail("version", f"must equal the version after @ in toolId ({version}); it is set from toolId")
    out["toolId"], out["version"] = tool_id, version

    execution_type = data.get("executionType")
    if execution_type not in ExecutionType.values:
        check.fail("executionType", f"must be one of {', '.join(ExecutionType.values)}")
        execution_type = None
    out["executionType"] = execution_type

    out["name"] = check.name(data.get("name"), "name")
    out["displayName"] = check.required_text(data.get("displayName"), "displayName", max_length=DISPLAY_NAME_MAX_LENGTH)
    description = check.required_text(data.get("description"), "description")
    if description is not None and len(description) >= DESCRIPTION_LIMIT:
        check.fail("description", f"must be fewer than {DESCRIPTION_LIMIT} characters (it has {len(description)})")
    out["description"] = description

    frameworks = data.get("supportedAgentFrameworks")
    if frameworks is None:
        check.fail("supportedAgentFrameworks", "is required: ['hosted']")
    elif frameworks != SUPPORTED_AGENT_FRAMEWORKS:
        check.fail("supportedAgentFrameworks", "must be ['hosted']: hosted is the only supported agent framework")
    out["supportedAgentFrameworks"] = list(SUPPORTED_AGENT_FRAMEWORKS)
    out["functionSchema"] = check.function_schema(data.get("functionSchema"))

    timeout = data.get("executionTimeout")
    if timeout is None:
        timeout = DEFAULT_EXECUTION_TIMEOUT
    elif not is_number(timeout) or timeout <= 0:
        check.fail("executionTimeout", "must be a positive number of seconds")
    elif timeout > MAX_EXECUTION_TIMEOUT:
        check.fail("executionTimeout", f"must be at most {MAX_EXECUTION_TIMEOUT} seconds")
    out["executionTimeout"] = timeout

    tags = data.get("tags")
    if tags is None:
        tags = {}
    elif not isinstance(tags, Mapping) or not all(isinstance(v, str) for v in tags.values()):
        check.fail("tags", "must be a map of string to string")
    out["tags"] = dict(tags) if isinstance(tags, Mapping) else {}

    out["lifecycle"] = check.lifecycle(data.get("lifecycle"), previous_status)
    out["accessRules"] = check.access_rules(data.get("accessRules"))
    out["approval"] = check.approval(data.get("approval"))

    test_type = data.get("testType")
    if test_type is not None and test_type not in TestType.values:
        check.fail("testType", f"must be {' or '.join(TestType.values)} when present")
    out["testType"] = test_type

    if execution_type is not None:
        for other_type, fields in VARIANT_FIELDS.items():
            if other_type == execution_type:
                continue
            for field in fields:
                # Refused rather than silently dropped: a stray field usually means a wrong executionType.
                if data.get(field) not in (None, ""):
                    check.fail(field, f"belongs to {other_type} tools and is not allowed when executionType is {execution_type}")

    if execution_type == ExecutionType.FUNCTION:
        function_arn = check.required_text(data.get("functionArn"), "functionArn", max_length=500)
        if function_arn is not None:
            try:
                check_function_arn(function_arn, verify_remote=function_arn != verified_function_arn)
            except FunctionRefError as exc:
                check.fail("functionArn", str(exc))
        out["functionArn"] = function_arn
    elif execution_type == ExecutionType.MCP:
        url = data.get("url")
        if url is None or url == "":
            check.fail("url", "is required")
        elif not _is_http_url(url):
            check.fail("url", "must be an http or https URL")
        out["url"] = url
        out["auth"] = check.auth(data.get("auth"))
    elif execution_type == ExecutionType.INLINE:
        code = data.get("code")
        if code is None or code == "":
            check.fail("code", "is required")
        elif not isinstance(code, str):
            check.fail("code", "must be a string (JavaScript source)")
        else:
            try:
                check_function_expression(code)
            except InvalidCode as exc:
                check.fail("code", str(exc))
        out["code"] = code

    if check.issues:
        raise ToolInvalid(check.issues)
    return out
