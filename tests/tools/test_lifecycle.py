"""Tool lifecycle (docs/api.md, "Tools"): active ↔ deprecated, anything → retired, retired is final."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.conftest import assert_error
from tests.factories import tool_payload
from tools.models import ToolDefinition

pytestmark = pytest.mark.django_db


def set_status(client: APIClient, status: str) -> Any:
    return client.post("/api/chat-admin/tool", {"tool": {"toolId": "weather@1", "lifecycle": {"status": status}}}, format="json")


@pytest.fixture
def tool(admin_client: APIClient) -> None:
    assert admin_client.post("/api/chat-admin/tool", {"tool": tool_payload()}, format="json").status_code == 200


@pytest.mark.parametrize("path", [["deprecated", "active"], ["deprecated", "retired"], ["retired"], ["deprecated", "active", "retired"]])
def test_allowed_transitions_are_stored(admin_client: APIClient, tool: None, path: list[str]) -> None:
    for status in path:
        response = set_status(admin_client, status)
        assert response.status_code == 200, response.json()
        assert response.json()["tool"]["lifecycle"]["status"] == status
    assert ToolDefinition.objects.get().lifecycle_status == path[-1]


@pytest.mark.parametrize("status", ["active", "deprecated"])
def test_a_retired_tool_cannot_be_reactivated(admin_client: APIClient, tool: None, status: str) -> None:
    set_status(admin_client, "retired")

    assert_error(
        set_status(admin_client, status),
        400,
        "INVALID_REQUEST",
        mentions="tool.lifecycle.status: a retired tool cannot be reactivated; create a new version",
    )
    assert ToolDefinition.objects.get().lifecycle_status == "retired"


def test_a_retired_tool_stays_readable_searchable_and_editable(admin_client: APIClient, tool: None) -> None:
    set_status(admin_client, "retired")

    assert admin_client.get("/api/chat-admin/tool/weather@1").json()["tool"]["lifecycle"]["status"] == "retired"
    assert [t["toolId"] for t in admin_client.post("/api/chat-admin/tools/search", {}, format="json").json()["tools"]] == ["weather@1"]
    response = admin_client.post("/api/chat-admin/tool", {"tool": {"toolId": "weather@1", "description": "Use weather@2"}}, format="json")
    assert response.status_code == 200, response.json()


def test_a_new_version_can_replace_a_retired_one(admin_client: APIClient, tool: None) -> None:
    set_status(admin_client, "retired")

    response = admin_client.post("/api/chat-admin/tool", {"tool": tool_payload(toolId="weather@2")}, format="json")

    assert response.json()["tool"]["lifecycle"] == {"status": "active"}


def test_updating_without_a_lifecycle_keeps_the_status(admin_client: APIClient, tool: None) -> None:
    set_status(admin_client, "deprecated")

    tool = admin_client.post("/api/chat-admin/tool", {"tool": {"toolId": "weather@1", "description": "Old"}}, format="json").json()["tool"]

    assert tool["lifecycle"]["status"] == "deprecated"
