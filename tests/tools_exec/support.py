"""The users and events a turn passes to tools, and Lambda functions in moto."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import boto3

REGION = "eu-west-1"  # of the moto Lambda functions

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
