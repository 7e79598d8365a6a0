"""Admin API of tools through HTTP: create, partial update, get, delete, search, permissions."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.conftest import assert_error
from tests.factories import ToolDefinitionFactory, tool_payload
from tools.models import ToolDefinition

pytestmark = pytest.mark.django_db


def upsert(client: APIClient, tool: dict[str, Any], user_id: str | None = "editor-1") -> Any:
    body: dict[str, Any] = {"tool": tool}
    if user_id is not None:
        body["userId"] = user_id
    return client.post("/api/chat-admin/tool", body, format="json")


def test_create_returns_the_stored_tool_with_service_fields(admin_client: APIClient) -> None:
    response = upsert(admin_client, tool_payload())

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is True
    tool = body["tool"]
    assert tool["toolId"] == "weather@1"
    assert tool["version"] == 1
    assert tool["executionType"] == "inline"
    assert tool["code"] == tool_payload()["code"]
    assert tool["functionSchema"] == tool_payload()["functionSchema"]
    assert tool["executionTimeout"] == 30
    assert tool["tags"] == {}
    assert tool["lifecycle"] == {"status": "active"}
    assert tool["createdBy"] == tool["lastModifiedBy"] == "editor-1"
    assert tool["createdAt"] and tool["updatedAt"]
    assert not {"functionArn", "url", "auth", "handler", "accessRules", "testType"} & set(tool)
    assert ToolDefinition.objects.get(tool_id="weather@1").version == 1


def test_version_comes_from_the_tool_id(admin_client: APIClient) -> None:
    response = upsert(admin_client, tool_payload(toolId="weather@12", version=12))

    assert response.status_code == 200, response.json()
    assert response.json()["tool"]["version"] == 12


def test_a_client_version_that_disagrees_with_the_tool_id_is_refused(admin_client: APIClient) -> None:
    assert_error(upsert(admin_client, tool_payload(toolId="weather@2", version=3)), 400, "INVALID_REQUEST", mentions="tool.version")
    assert not ToolDefinition.objects.exists()


def test_stamps_come_from_user_id_and_client_stamps_are_ignored(admin_client: APIClient) -> None:
    payload = tool_payload(createdBy="mallory", lastModifiedBy="mallory", createdAt="2000-01-01T00:00:00Z")
    tool = upsert(admin_client, payload, user_id="editor-1").json()["tool"]

    assert tool["createdBy"] == "editor-1"
    assert tool["lastModifiedBy"] == "editor-1"
    assert not tool["createdAt"].startswith("2000")


def test_stamps_fall_back_to_the_caller_when_user_id_is_absent(admin_client: APIClient) -> None:
    tool = upsert(admin_client, tool_payload(), user_id=None).json()["tool"]

    assert tool["createdBy"] == "root-admin"


def test_update_holds_only_the_changed_fields_and_refreshes_the_stamps(admin_client: APIClient) -> None:
    created = upsert(admin_client, tool_payload(tags={"team": "weather"}), user_id="editor-1").json()["tool"]

    response = upsert(admin_client, {"toolId": "weather@1", "description": "Forecasts for any city"}, user_id="editor-2")

    assert response.status_code == 200, response.json()
    updated = response.json()["tool"]
    assert updated["description"] == "Forecasts for any city"
    assert updated["createdBy"] == "editor-1"
    assert updated["lastModifiedBy"] == "editor-2"
    assert updated["createdAt"] == created["createdAt"]
    assert updated["updatedAt"] > created["updatedAt"]
    unchanged = {k: v for k, v in created.items() if k not in {"description", "lastModifiedBy", "updatedAt"}}
    assert {k: updated[k] for k in unchanged} == unchanged
    assert ToolDefinition.objects.count() == 1


def test_an_update_is_validated_as_a_whole_after_merging(admin_client: APIClient) -> None:
    upsert(admin_client, tool_payload())

    response = upsert(admin_client, {"toolId": "weather@1", "description": "x" * 500})

    assert_error(response, 400, "INVALID_REQUEST", mentions="tool.description: must be fewer than 500 characters")
    assert ToolDefinition.objects.get().description == "Looks up the weather forecast"


def test_null_clears_an_optional_field_on_update(admin_client: APIClient) -> None:
    upsert(admin_client, tool_payload(testType="mock", accessRules=[{"effect": "allow"}]))

    tool = upsert(admin_client, {"toolId": "weather@1", "testType": None, "accessRules": None}).json()["tool"]

    assert "testType" not in tool and "accessRules" not in tool


def test_changing_the_execution_type_drops_the_old_variant_fields(admin_client: APIClient) -> None:
    upsert(admin_client, tool_payload("inline"))

    response = upsert(admin_client, {"toolId": "weather@1", "executionType": "function", "functionArn": "local:echo"})

    assert response.status_code == 200, response.json()
    tool = response.json()["tool"]
    assert tool["functionArn"] == "local:echo"
    assert "code" not in tool
    assert ToolDefinition.objects.get().code == ""


def test_a_new_version_is_a_separate_tool(admin_client: APIClient) -> None:
    upsert(admin_client, tool_payload(toolId="weather@1"))
    upsert(admin_client, tool_payload(toolId="weather@2", description="Version two"))

    assert sorted(ToolDefinition.objects.values_list("tool_id", "version")) == [("weather@1", 1), ("weather@2", 2)]


def test_get_returns_the_tool(admin_client: APIClient) -> None:
    ToolDefinitionFactory(tool_id="calendar@3")

    response = admin_client.get("/api/chat-admin/tool/calendar@3")

    assert response.status_code == 200
    assert response.json()["success"] is True
    assert response.json()["tool"]["toolId"] == "calendar@3"
    assert response.json()["tool"]["version"] == 3


def test_get_of_an_absent_tool_is_404_not_found(admin_client: APIClient) -> None:
    assert_error(admin_client.get("/api/chat-admin/tool/nothing@1"), 404, "NOT_FOUND", mentions="nothing@1")


def test_delete_removes_the_tool(admin_client: APIClient) -> None:
    ToolDefinitionFactory(tool_id="calendar@1")

    response = admin_client.delete("/api/chat-admin/tool/calendar@1")

    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert_error(admin_client.get("/api/chat-admin/tool/calendar@1"), 404, "NOT_FOUND")


def test_delete_of_an_absent_tool_is_404_not_found(admin_client: APIClient) -> None:
    assert_error(admin_client.delete("/api/chat-admin/tool/nothing@1"), 404, "NOT_FOUND")


def test_search_without_tool_ids_returns_all_tools_ordered_by_tool_id(admin_client: APIClient) -> None:
    for tool_id in ("b-tool@1", "a-tool@2", "a-tool@1"):
        ToolDefinitionFactory(tool_id=tool_id)

    response = admin_client.post("/api/chat-admin/tools/search", {"userId": "root-admin"}, format="json")

    assert response.status_code == 200
    assert [tool["toolId"] for tool in response.json()["tools"]] == ["a-tool@1", "a-tool@2", "b-tool@1"]


def test_search_by_tool_ids_returns_only_those_that_exist(admin_client: APIClient) -> None:
    for tool_id in ("b-tool@1", "a-tool@1", "c-tool@1"):
        ToolDefinitionFactory(tool_id=tool_id)

    response = admin_client.post("/api/chat-admin/tools/search", {"toolIds": ["c-tool@1", "a-tool@1", "zzz@1"]}, format="json")

    assert [tool["toolId"] for tool in response.json()["tools"]] == ["a-tool@1", "c-tool@1"]


def test_search_with_an_empty_list_returns_nothing(admin_client: APIClient) -> None:
    ToolDefinitionFactory()

    response = admin_client.post("/api/chat-admin/tools/search", {"toolIds": []}, format="json")

    assert response.json() == {"success": True, "tools": []}


def test_search_refuses_tool_ids_that_are_not_a_list(admin_client: APIClient) -> None:
    assert_error(
        admin_client.post("/api/chat-admin/tools/search", {"toolIds": "a@1"}, format="json"), 400, "INVALID_REQUEST", mentions="toolIds"
    )


def test_a_body_without_tool_is_refused(admin_client: APIClient) -> None:
    assert_error(admin_client.post("/api/chat-admin/tool", {"userId": "x"}, format="json"), 400, "INVALID_REQUEST", mentions="tool")


def test_a_tool_that_is_not_an_object_is_refused(admin_client: APIClient) -> None:
    assert_error(
        admin_client.post("/api/chat-admin/tool", {"tool": [1]}, format="json"), 400, "INVALID_REQUEST", mentions="tool: must be an object"
    )


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/chat-admin/tool", {"tool": tool_payload()}),
        ("get", "/api/chat-admin/tool/weather@1", None),
        ("delete", "/api/chat-admin/tool/weather@1", None),
        ("post", "/api/chat-admin/tools/search", {}),
    ],
)
def test_non_admins_are_refused_with_403(user_client: APIClient, anon_client: APIClient, method: str, path: str, body: Any) -> None:
    ToolDefinitionFactory(tool_id="weather@1", description="Untouched")

    assert_error(getattr(user_client, method)(path, body, format="json"), 403, "INSUFFICIENT_PERMISSIONS")
    assert_error(getattr(anon_client, method)(path, body, format="json"), 401)
    assert ToolDefinition.objects.get().description == "Untouched"


def test_the_endpoints_are_in_the_openapi_schema(admin_client: APIClient) -> None:
    schema = admin_client.get("/api/schema/", {"format": "json"}).json()

    assert {"/api/chat-admin/tool", "/api/chat-admin/tool/{tool_id}", "/api/chat-admin/tools/search"} <= set(schema["paths"])
    upsert_request = schema["components"]["schemas"]["ToolUpsertRequest"]
    assert upsert_request["properties"]["tool"] == {"$ref": "#/components/schemas/ToolWriteRequest"}
    assert {"lifecycle", "auth", "functionSchema"} <= set(schema["components"]["schemas"]["ToolWriteRequest"]["properties"])
