"""The OAuth client secret and the cached token of mcp tools never leave the service."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from chat.users.models import ChatUser
from tests.factories import tool_payload
from tools.models import ToolDefinition

pytestmark = pytest.mark.django_db

SECRET = "s3cr3t-Client-Value-91f2"
TOKEN = "cached-access-token-77ab"
AUTH = {"clientId": "weather-client", "clientSecret": SECRET, "tokenUrl": "https://id.example.com/oauth/token"}
REDACTED_AUTH = {"clientId": "weather-client", "clientSecret": "********", "tokenUrl": "https://id.example.com/oauth/token"}


def upsert(client: APIClient, tool: dict[str, Any]) -> Any:
    return client.post("/api/chat-admin/tool", {"tool": tool, "userId": "editor"}, format="json")


@pytest.fixture
def mcp_tool(admin_client: APIClient) -> Any:
    response = upsert(admin_client, tool_payload("mcp", auth=AUTH))
    assert response.status_code == 200, response.json()
    return response


def store_cached_token() -> None:
    # The token is written by the MCP executor (a later issue); the record is its only interface.
    tool = ToolDefinition.objects.get(tool_id="weather@1")
    tool.auth = {**tool.auth, "token": {"accessToken": TOKEN, "expires": 4102444800}}
    tool.save()


def test_create_stores_the_secret_and_returns_it_redacted(mcp_tool: Any) -> None:
    assert SECRET not in mcp_tool.content.decode()
    assert mcp_tool.json()["tool"]["auth"] == REDACTED_AUTH
    assert ToolDefinition.objects.get().auth["clientSecret"] == SECRET


def test_get_update_and_search_never_return_the_secret_or_the_token(admin_client: APIClient, mcp_tool: Any) -> None:
    store_cached_token()
    responses = [
        admin_client.get("/api/chat-admin/tool/weather@1"),
        upsert(admin_client, {"toolId": "weather@1", "description": "Changed"}),
        admin_client.post("/api/chat-admin/tools/search", {}, format="json"),
        admin_client.post("/api/chat-admin/tools/search", {"toolIds": ["weather@1"]}, format="json"),
    ]

    for response in responses:
        assert response.status_code == 200, response.json()
        content = response.content.decode()
        assert SECRET not in content
        assert TOKEN not in content
        assert "accessToken" not in content
    assert responses[0].json()["tool"]["auth"] == REDACTED_AUTH
    assert responses[2].json()["tools"][0]["auth"] == REDACTED_AUTH


def test_sending_the_placeholder_back_keeps_the_stored_secret(admin_client: APIClient, mcp_tool: Any) -> None:
    tool = admin_client.get("/api/chat-admin/tool/weather@1").json()["tool"]

    response = upsert(admin_client, {**tool, "description": "Round-tripped"})

    assert response.status_code == 200, response.json()
    assert ToolDefinition.objects.get().auth["clientSecret"] == SECRET


def test_an_auth_without_a_secret_keeps_the_stored_secret(admin_client: APIClient, mcp_tool: Any) -> None:
    auth = {"clientId": "other-client", "tokenUrl": "https://id.example.com/oauth/token"}

    assert upsert(admin_client, {"toolId": "weather@1", "auth": auth}).status_code == 200

    assert ToolDefinition.objects.get().auth == {**auth, "clientSecret": SECRET}


def test_a_new_secret_replaces_the_stored_one_and_drops_the_cached_token(admin_client: APIClient, mcp_tool: Any) -> None:
    store_cached_token()

    response = upsert(admin_client, {"toolId": "weather@1", "auth": {**AUTH, "clientSecret": "rotated-secret-123"}})

    assert response.status_code == 200
    assert "rotated-secret-123" not in response.content.decode()
    assert ToolDefinition.objects.get().auth == {**AUTH, "clientSecret": "rotated-secret-123"}


def test_an_unrelated_update_keeps_the_cached_token(admin_client: APIClient, mcp_tool: Any) -> None:
    store_cached_token()

    assert upsert(admin_client, {"toolId": "weather@1", "displayName": "Weather (v1)"}).status_code == 200

    assert ToolDefinition.objects.get().auth["token"]["accessToken"] == TOKEN


def test_null_auth_removes_the_credentials(admin_client: APIClient, mcp_tool: Any) -> None:
    tool = upsert(admin_client, {"toolId": "weather@1", "auth": None}).json()["tool"]

    assert "auth" not in tool
    assert ToolDefinition.objects.get().auth is None


def test_the_django_admin_never_renders_the_secret(mcp_tool: Any) -> None:
    store_cached_token()
    browser = Client()
    browser.force_login(ChatUser.objects.create_superuser("staff-admin"))

    changelist = browser.get("/admin/tools/tooldefinition/")
    change = browser.get("/admin/tools/tooldefinition/weather@1/change/")

    assert changelist.status_code == change.status_code == 200
    for page in (changelist, change):
        html = page.content.decode()
        assert SECRET not in html
        assert TOKEN not in html
    assert "weather@1" in changelist.content.decode()
    assert "weather-client" in change.content.decode()
