"""Every rule of a tool definition, refused through the Admin API with 400 naming the field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.conftest import assert_error
from tests.factories import WEATHER_FUNCTION, tool_payload
from tools.models import ToolDefinition

pytestmark = pytest.mark.django_db


def without(field: str, execution_type: str = "inline") -> dict[str, Any]:
    payload = tool_payload(execution_type)
    del payload[field]
    return payload


def with_parameter(definition: Any, name: str = "p") -> dict[str, Any]:
    function = copy.deepcopy(WEATHER_FUNCTION)
    function["parameters"] = {name: definition}
    return tool_payload(functionSchema=[function])


def with_function(**changes: Any) -> dict[str, Any]:
    function = {**copy.deepcopy(WEATHER_FUNCTION), **changes}
    return tool_payload(functionSchema=[{k: v for k, v in function.items() if v is not None}])


def string_param(**changes: Any) -> dict[str, Any]:
    return {"description": "d", "type": "string", "required": True, **changes}


def nested(levels: int) -> dict[str, Any]:
    """A string parameter inside `levels - 1` arrays: `levels` levels of parameter definitions."""
    definition = string_param()
    for _ in range(levels - 1):
        definition = string_param(type="array", items=definition)
    return definition


REFUSED: list[tuple[str, Callable[[], dict[str, Any]], str]] = [
    # toolId and version (docs/api.md, "Tools")
    ("tool id missing", lambda: without("toolId"), "tool.toolId: is required"),
    ("tool id without a version", lambda: tool_payload(toolId="weather"), "tool.toolId: must have the form <name>@<version>"),
    ("tool id with version zero", lambda: tool_payload(toolId="weather@0"), "tool.toolId: must have the form"),
    ("tool id with a leading zero", lambda: tool_payload(toolId="weather@01"), "tool.toolId: must have the form"),
    ("tool id with a word version", lambda: tool_payload(toolId="weather@latest"), "tool.toolId: must have the form"),
    ("tool id with a huge version", lambda: tool_payload(toolId="weather@4294967296"), "tool.toolId: version must be at most 2147483647"),
    ("tool id with an endless version", lambda: tool_payload(toolId="weather@" + "9" * 5000), "tool.toolId: must have the form"),
    ("tool id with a bad name", lambda: tool_payload(toolId="the weather@1"), "tool.toolId: the part before @"),
    ("version that disagrees", lambda: tool_payload(version=2), "tool.version: must equal the version after @ in toolId (1)"),
    # common fields
    ("execution type missing", lambda: without("executionType"), "tool.executionType: must be one of function, mcp, inline"),
    ("execution type unknown", lambda: tool_payload(executionType="lambda"), "tool.executionType: must be one of"),
    ("name missing", lambda: without("name"), "tool.name: is required"),
    ("name with a space", lambda: tool_payload(name="get weather"), "tool.name: must match ^([0-9a-zA-Z][_-]?){1,100}$"),
    ("name with two separators", lambda: tool_payload(name="get__weather"), "tool.name: must match"),
    ("name starting with a separator", lambda: tool_payload(name="_weather"), "tool.name: must match"),
    ("name too long", lambda: tool_payload(name="a" * 101), "tool.name: must be at most 100 characters"),
    ("name not a string", lambda: tool_payload(name=5), "tool.name: must be a string"),
    ("display name missing", lambda: without("displayName"), "tool.displayName: is required"),
    ("display name blank", lambda: tool_payload(displayName="   "), "tool.displayName: must not be blank"),
    ("description missing", lambda: without("description"), "tool.description: is required"),
    ("description of 500 characters", lambda: tool_payload(description="x" * 500), "tool.description: must be fewer than 500 characters"),
    ("frameworks missing", lambda: without("supportedAgentFrameworks"), "tool.supportedAgentFrameworks: is required"),
    ("framework unknown", lambda: tool_payload(supportedAgentFrameworks=["other"]), "tool.supportedAgentFrameworks: must be ['hosted']"),
    ("framework extra", lambda: tool_payload(supportedAgentFrameworks=["hosted", "other"]), "tool.supportedAgentFrameworks: must be"),
    ("frameworks empty", lambda: tool_payload(supportedAgentFrameworks=[]), "tool.supportedAgentFrameworks: must be"),
    ("timeout zero", lambda: tool_payload(executionTimeout=0), "tool.executionTimeout: must be a positive number"),
    ("timeout negative", lambda: tool_payload(executionTimeout=-5), "tool.executionTimeout: must be a positive number"),
    ("timeout as text", lambda: tool_payload(executionTimeout="30"), "tool.executionTimeout: must be a positive number"),
    ("timeout above the cap", lambda: tool_payload(executionTimeout=901), "tool.executionTimeout: must be at most 900 seconds"),
    ("tags with a number value", lambda: tool_payload(tags={"team": 1}), "tool.tags: must be a map of string to string"),
    ("tags as a list", lambda: tool_payload(tags=["a"]), "tool.tags: must be a map"),
    ("lifecycle status unknown", lambda: tool_payload(lifecycle={"status": "gone"}), "tool.lifecycle.status: must be one of active"),
    ("lifecycle without status", lambda: tool_payload(lifecycle={"migrationPath": "x@2"}), "tool.lifecycle.status: must be one of"),
    (
        "lifecycle date not ISO",
        lambda: tool_payload(lifecycle={"status": "deprecated", "deprecationDate": "next week"}),
        "tool.lifecycle.deprecationDate",
    ),
    (
        "lifecycle impossible date",
        lambda: tool_payload(lifecycle={"status": "deprecated", "deprecationDate": "2026-02-30"}),
        "deprecationDate",
    ),
    ("lifecycle unknown key", lambda: tool_payload(lifecycle={"status": "active", "when": 1}), "tool.lifecycle.when: is not a field"),
    ("lifecycle not an object", lambda: tool_payload(lifecycle="active"), "tool.lifecycle: must be an object"),
    ("access rules not a list", lambda: tool_payload(accessRules={"effect": "allow"}), "tool.accessRules: must be a list"),
    (
        "access rule invalid CEL",
        lambda: tool_payload(accessRules=[{"condition": "user.email ==", "effect": "allow"}]),
        "tool.accessRules[0].condition: not a valid CEL",
    ),
    (
        "access rule without effect",
        lambda: tool_payload(accessRules=[{"condition": "true"}]),
        "tool.accessRules[0].effect: must be allow or deny",
    ),
    ("access rule bad effect", lambda: tool_payload(accessRules=[{"effect": "maybe"}]), "tool.accessRules[0].effect"),
    (
        "access rule order as text",
        lambda: tool_payload(accessRules=[{"effect": "deny", "order": "first"}]),
        "tool.accessRules[0].order: must be a number",
    ),
    ("access rule unknown key", lambda: tool_payload(accessRules=[{"effect": "deny", "who": "x"}]), "tool.accessRules[0].who"),
    ("test type other than mock", lambda: tool_payload(testType="real"), "tool.testType: must be mock"),
    ("unknown field", lambda: tool_payload(colour="blue"), "tool.colour: is not a field of a tool definition"),
    ("handler sent", lambda: tool_payload(handler="function () {}"), "tool.handler: is a runtime function and is never stored"),
    # functionSchema, FunctionDefinition, ParameterDefinition
    (
        "function schema missing",
        lambda: without("functionSchema"),
        "tool.functionSchema: is required when supportedAgentFrameworks includes hosted",
    ),
    ("function schema empty", lambda: tool_payload(functionSchema=[]), "tool.functionSchema: must be a non-empty list"),
    (
        "function not an object",
        lambda: tool_payload(functionSchema=["get_weather"]),
        "tool.functionSchema[0]: must be a function definition",
    ),
    ("function name with a dot", lambda: with_function(name="get.weather"), "tool.functionSchema[0].name: must match"),
    ("function name missing", lambda: with_function(name=None), "tool.functionSchema[0].name: is required"),
    ("function description missing", lambda: with_function(description=None), "tool.functionSchema[0].description: is required"),
    ("function parameters missing", lambda: with_function(parameters=None), "tool.functionSchema[0].parameters: is required"),
    ("function unknown key", lambda: with_function(returns="x"), "tool.functionSchema[0].returns: is not a field"),
    (
        "function names repeated",
        lambda: tool_payload(functionSchema=[copy.deepcopy(WEATHER_FUNCTION), copy.deepcopy(WEATHER_FUNCTION)]),
        "tool.functionSchema[1].name: 'get_weather' is already the name of another function",
    ),
    ("parameter not an object", lambda: with_parameter("string"), "tool.functionSchema[0].parameters.p: must be a parameter definition"),
    (
        "parameter type unknown",
        lambda: with_parameter(string_param(type="integer")),
        "tool.functionSchema[0].parameters.p.type: must be one of string",
    ),
    (
        "parameter required not boolean",
        lambda: with_parameter(string_param(required="yes")),
        "parameters.p.required: is required (true or false)",
    ),
    ("parameter required missing", lambda: with_parameter({"description": "d", "type": "string"}), "parameters.p.required"),
    (
        "parameter description missing",
        lambda: with_parameter({"type": "string", "required": True}),
        "parameters.p.description: is required",
    ),
    (
        "enum on a number",
        lambda: with_parameter(string_param(type="number", enum=["1"])),
        "parameters.p.enum: is only allowed for type string",
    ),
    ("enum of numbers", lambda: with_parameter(string_param(enum=[1, 2])), "parameters.p.enum: must be a non-empty list of strings"),
    ("enum empty", lambda: with_parameter(string_param(enum=[])), "parameters.p.enum: must be a non-empty list of strings"),
    ("array without items", lambda: with_parameter(string_param(type="array")), "parameters.p.items: is required for type array"),
    ("items on a string", lambda: with_parameter(string_param(items=string_param())), "parameters.p.items: is only allowed for type array"),
    (
        "object without properties",
        lambda: with_parameter(string_param(type="object")),
        "parameters.p.properties: is required for type object",
    ),
    (
        "properties on a string",
        lambda: with_parameter(string_param(properties={})),
        "parameters.p.properties: is only allowed for type object",
    ),
    (
        "nested item with a bad type",
        lambda: with_parameter(string_param(type="array", items=string_param(type="object", properties={"q": string_param(type="date")}))),
        "tool.functionSchema[0].parameters.p.items.properties.q.type: must be one of",
    ),
    (
        "parameter unknown key",
        lambda: with_parameter(string_param(format="email")),
        "parameters.p.format: is not a field of a parameter definition",
    ),
    ("enum repeating a value", lambda: with_parameter(string_param(enum=["a", "a"])), "parameters.p.enum: must not repeat a value"),
    ("blank parameter name", lambda: with_parameter(string_param(), name=" "), "parameters: parameter names must not be blank"),
    ("parameters nested too deep", lambda: with_parameter(nested(11)), "must not nest deeper than 10 levels"),
    ("name ending in a newline", lambda: tool_payload(name="weather\n"), "tool.name: must match"),
    (
        "approval timeout of zero",
        lambda: tool_payload(approval={"required": True, "timeoutSeconds": 0}),
        "tool.approval.timeoutSeconds: must be a whole number of seconds from 1 to 2592000",
    ),
    # variants
    (
        "field of another variant",
        lambda: tool_payload("inline", url="https://example.com"),
        "tool.url: belongs to mcp tools and is not allowed when executionType is inline",
    ),
    ("function arn on an mcp tool", lambda: tool_payload("mcp", functionArn="local:echo"), "tool.functionArn: belongs to function tools"),
    ("function arn missing", lambda: without("functionArn", "function"), "tool.functionArn: is required"),
    (
        "function arn of an unknown kind",
        lambda: tool_payload("function", functionArn="gcp:fn"),
        "tool.functionArn: is not a valid function resource name",
    ),
    (
        "function arn not a lambda arn",
        lambda: tool_payload("function", functionArn="arn:aws:s3:::bucket"),
        "tool.functionArn: is not a valid function resource name",
    ),
    (
        "local function not registered",
        lambda: tool_payload("function", functionArn="local:nope"),
        "tool.functionArn: no local function named 'nope' is registered",
    ),
    ("mcp url missing", lambda: without("url", "mcp"), "tool.url: is required"),
    ("mcp url not http", lambda: tool_payload("mcp", url="ftp://files.example.com"), "tool.url: must be an http or https URL"),
    ("mcp url without host", lambda: tool_payload("mcp", url="https://"), "tool.url: must be an http or https URL"),
    (
        "mcp auth incomplete",
        lambda: tool_payload("mcp", auth={"clientId": "c", "tokenUrl": "https://id.example.com/token"}),
        "tool.auth.clientSecret: is required",
    ),
    (
        "mcp auth blank client id",
        lambda: tool_payload("mcp", auth={"clientId": "", "clientSecret": "s", "tokenUrl": "https://id.example.com/t"}),
        "tool.auth.clientId: is required",
    ),
    (
        "mcp token url not http",
        lambda: tool_payload("mcp", auth={"clientId": "c", "clientSecret": "s", "tokenUrl": "id.example.com"}),
        "tool.auth.tokenUrl: must be an http or https URL",
    ),
    (
        "mcp cached token sent by a client",
        lambda: tool_payload(
            "mcp",
            auth={
                "clientId": "c",
                "clientSecret": "s",
                "tokenUrl": "https://id.example.com/t",
                "token": {"accessToken": "a", "expires": 1},
            },
        ),
        "tool.auth.token: is managed by the service",
    ),
    (
        "mcp placeholder secret on create",
        lambda: tool_payload("mcp", auth={"clientId": "c", "clientSecret": "********", "tokenUrl": "https://id.example.com/t"}),
        "tool.auth.clientSecret: must be the secret itself",
    ),
    ("inline code missing", lambda: without("code"), "tool.code: is required"),
    ("inline code not a function", lambda: tool_payload(code="return 1;"), "tool.code: is not valid JavaScript"),
]


@pytest.mark.parametrize(("payload", "mentions"), [pytest.param(make, mentions, id=name) for name, make, mentions in REFUSED])
def test_a_definition_breaking_a_rule_is_refused_naming_the_field(admin_client: APIClient, payload: Callable, mentions: str) -> None:
    response = admin_client.post("/api/chat-admin/tool", {"tool": payload(), "userId": "editor"}, format="json")

    assert_error(response, 400, "INVALID_REQUEST", mentions=mentions)
    assert not ToolDefinition.objects.exists()


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("description of 499 characters", tool_payload(description="x" * 499)),
    ("name of 100 characters", tool_payload(name="a" * 100)),
    ("name with single separators", tool_payload(name="get_weather-v2-")),
    ("timeout at the cap", tool_payload(executionTimeout=900)),
    ("fractional timeout", tool_payload(executionTimeout=2.5)),
    ("function without parameters", tool_payload(functionSchema=[{"name": "ping", "description": "Ping", "parameters": {}}])),
    (
        "lifecycle with a date",
        tool_payload(lifecycle={"status": "deprecated", "deprecationDate": "2027-01-31", "migrationPath": "weather@2"}),
    ),
    (
        "access rules",
        tool_payload(accessRules=[{"condition": "user.userType == 'internal-user'", "effect": "allow", "order": 1}, {"effect": "deny"}]),
    ),
    ("parameters nested ten levels", with_parameter(nested(10))),
    ("mock tool with tags", tool_payload(testType="mock", tags={"team": "weather"})),
    ("mcp tool without auth", tool_payload("mcp")),
    ("mcp tool with auth", tool_payload("mcp", auth={"clientId": "c", "clientSecret": "s", "tokenUrl": "http://127.0.0.1:9000/token"})),
    ("local function", tool_payload("function", functionArn="local:calculator")),
]


@pytest.mark.parametrize("payload", [pytest.param(payload, id=name) for name, payload in ACCEPTED])
def test_a_definition_at_the_limits_is_accepted(admin_client: APIClient, payload: dict[str, Any]) -> None:
    response = admin_client.post("/api/chat-admin/tool", {"tool": payload}, format="json")

    assert response.status_code == 200, response.json()
    assert ToolDefinition.objects.filter(tool_id=payload["toolId"]).exists()


def test_every_broken_rule_is_named_in_one_response(admin_client: APIClient) -> None:
    payload = tool_payload(name="bad name", description="x" * 600, executionTimeout=1000)

    body = assert_error(admin_client.post("/api/chat-admin/tool", {"tool": payload}, format="json"), 400, "INVALID_REQUEST")

    for field in ("tool.name", "tool.description", "tool.executionTimeout"):
        assert field in body["error"]


def test_every_unknown_field_is_named(admin_client: APIClient) -> None:
    body = assert_error(admin_client.post("/api/chat-admin/tool", {"tool": tool_payload(colour="blue", size=2)}, format="json"), 400)

    assert "tool.colour: is not a field" in body["error"]
    assert "tool.size: is not a field" in body["error"]


def test_a_deprecation_date_is_stored_as_a_timestamp(admin_client: APIClient) -> None:
    payload = tool_payload(lifecycle={"status": "deprecated", "deprecationDate": "2027-01-31"})

    tool = admin_client.post("/api/chat-admin/tool", {"tool": payload}, format="json").json()["tool"]

    assert tool["lifecycle"] == {"status": "deprecated", "deprecationDate": "2027-01-31T00:00:00Z"}
