"""Stored tool definitions of each execution type, and the users and events a turn passes in."""

from __future__ import annotations

import copy
import io
import zipfile
from typing import Any

import boto3
import factory

from tests.tools.factories import ToolDefinitionFactory

REGION = "eu-west-1"  # of the moto Lambda functions
ADD_FUNCTION: dict[str, Any] = {
    "name": "add",
    "description": "Adds two numbers",
    "parameters": {
        "a": {"description": "First", "type": "number", "required": True},
        "b": {"description": "Second", "type": "number", "required": True},
    },
}
NO_PARAMETERS: dict[str, Any] = {}

USER: dict[str, Any] = {
    "userId": "alice",
    "email": "alice@example.com",
    "firstName": "Alice",
    "lastName": "Liddell",
    "userType": "external-user",
    "roles": [],
    "customData": {"accountId": "acme", "plan": "gold"},
}
EVENT_BASE: dict[str, Any] = {
    "userId": "alice",
    "sessionId": "session-1",
    "chatAppId": "support",
    "agentId": "helper",
    "customData": {"accountId": "acme", "plan": "gold"},
    "timezone": "Europe/Paris",
}


def function(name: str, parameters: dict[str, Any] | None = None, description: str = "A function") -> dict[str, Any]:
    """A FunctionDefinition; parameters are ParameterDefinitions."""
    return {"name": name, "description": description, "parameters": copy.deepcopy(parameters or {})}


class ToolFactory(ToolDefinitionFactory):
    """An inline tool by default; `function_schema` lists its FunctionDefinitions."""

    tool_id = factory.Sequence(lambda n: f"exec-tool-{n}@1")
    execution_timeout = 5
    function_schema = factory.LazyFunction(lambda: [copy.deepcopy(ADD_FUNCTION)])
    code = "(event, params) => ({ sum: params.a + params.b })"
    created_by = "tests"
    last_modified_by = "tests"


def create_lambda(client: Any, name: str) -> str:
    """A function tagged agent-tool=true in moto (inside the `aws` fixture); its ARN."""
    role = boto3.client("iam", region_name=REGION).create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("handler.py", "def handler(event, context):\n    return event\n")
    created = client.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": archive.getvalue()},
        Tags={"agent-tool": "true"},
    )
    return created["FunctionArn"]
