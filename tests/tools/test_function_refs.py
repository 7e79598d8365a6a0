"""`function` tools: functionArn names a registered local function or an AWS Lambda function,
which must exist and carry the tag agent-tool=true (docs/api.md, "Tools"). Lambda is moto's."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from rest_framework.test import APIClient

from tests.conftest import assert_error
from tests.factories import tool_payload
from tools.models import ToolDefinition
from tools.registry import agent_function, unregister

pytestmark = pytest.mark.django_db

REGION = "eu-west-1"


def upsert(client: APIClient, tool: dict[str, Any]) -> Any:
    return client.post("/api/chat-admin/tool", {"tool": tool}, format="json")


# --- local functions -----------------------------------------------------------------------------


@pytest.fixture
def local_functions() -> Iterator[None]:
    @agent_function(name="test_untagged", tags={"team": "tests"})
    def untagged(event: dict[str, Any], params: dict[str, Any]) -> str:
        return "x"

    @agent_function(name="test_tag_false", tags={"agent-tool": "false"})
    def tag_false(event: dict[str, Any], params: dict[str, Any]) -> str:
        return "x"

    @agent_function(name="test.tagged_async", tags={"agent-tool": "TRUE"})
    async def tagged_async(event: dict[str, Any], params: dict[str, Any]) -> str:
        return "x"

    yield
    for name in ("test_untagged", "test_tag_false", "test.tagged_async"):
        unregister(name)


@pytest.mark.parametrize("function_arn", ["local:echo", "local:current_time", "local:calculator", "local:test.tagged_async"])
def test_a_registered_local_function_tagged_agent_tool_is_accepted(
    admin_client: APIClient, local_functions: None, function_arn: str
) -> None:
    response = upsert(admin_client, tool_payload("function", functionArn=function_arn))

    assert response.status_code == 200, response.json()
    assert response.json()["tool"]["functionArn"] == function_arn


@pytest.mark.parametrize("name", ["test_untagged", "test_tag_false"])
def test_a_local_function_without_the_agent_tool_tag_is_refused(admin_client: APIClient, local_functions: None, name: str) -> None:
    response = upsert(admin_client, tool_payload("function", functionArn=f"local:{name}"))

    assert_error(
        response, 400, "INVALID_REQUEST", mentions=f"tool.functionArn: local function '{name}' does not carry the tag agent-tool=true"
    )
    assert not ToolDefinition.objects.exists()


def test_a_local_function_that_is_not_registered_is_refused(admin_client: APIClient) -> None:
    response = upsert(admin_client, tool_payload("function", functionArn="local:missing_function"))

    assert_error(response, 400, "INVALID_REQUEST", mentions="no local function named 'missing_function' is registered")


# --- AWS Lambda (moto) ---------------------------------------------------------------------------


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def aws(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("lambda", region_name=REGION)


def create_function(lambda_client: Any, name: str, tags: dict[str, str] | None) -> str:
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(
        RoleName=f"{name}-role",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("handler.py", "def handler(event, context):\n    return {'ok': True}\n")
    extra = {"Tags": tags} if tags is not None else {}
    created = lambda_client.create_function(
        FunctionName=name,
        Runtime="python3.12",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": archive.getvalue()},
        **extra,
    )
    return created["FunctionArn"]


@pytest.mark.parametrize("value", ["true", "True", "TRUE"])
def test_a_lambda_function_tagged_agent_tool_is_accepted(admin_client: APIClient, aws: Any, value: str) -> None:
    function_arn = create_function(aws, "weather-tool", {"agent-tool": value, "team": "weather"})

    response = upsert(admin_client, tool_payload("function", functionArn=function_arn))

    assert response.status_code == 200, response.json()
    assert response.json()["tool"]["functionArn"] == function_arn


@pytest.mark.parametrize("tags", [None, {"team": "weather"}, {"agent-tool": "false"}])
def test_a_lambda_function_without_the_agent_tool_tag_is_refused(admin_client: APIClient, aws: Any, tags: dict[str, str] | None) -> None:
    function_arn = create_function(aws, "weather-tool", tags)

    response = upsert(admin_client, tool_payload("function", functionArn=function_arn))

    assert_error(response, 400, "INVALID_REQUEST", mentions="does not carry the tag agent-tool=true")
    assert not ToolDefinition.objects.exists()


def test_a_lambda_function_that_does_not_exist_is_refused(admin_client: APIClient, aws: Any) -> None:
    function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:nothing-here"

    response = upsert(admin_client, tool_payload("function", functionArn=function_arn))

    assert_error(response, 400, "INVALID_REQUEST", mentions=f"tool.functionArn: AWS Lambda function {function_arn} does not exist")


def test_a_lambda_function_that_cannot_be_verified_is_refused(
    admin_client: APIClient, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)
    function_arn = f"arn:aws:lambda:{REGION}:123456789012:function:weather-tool"

    response = upsert(admin_client, tool_payload("function", functionArn=function_arn))

    assert_error(response, 400, "INVALID_REQUEST", mentions=f"tool.functionArn: AWS Lambda function {function_arn} could not be verified")


def test_an_update_that_keeps_a_verified_lambda_arn_does_not_ask_aws_again(
    admin_client: APIClient, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with mock_aws():
        function_arn = create_function(boto3.client("lambda", region_name=REGION), "weather-tool", {"agent-tool": "true"})
        assert upsert(admin_client, tool_payload("function", functionArn=function_arn)).status_code == 200
    # Without mock_aws and credentials any new lookup would fail with "could not be verified".
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name)

    response = upsert(admin_client, {"toolId": "weather@1", "description": "Edited while AWS is away"})

    assert response.status_code == 200, response.json()
