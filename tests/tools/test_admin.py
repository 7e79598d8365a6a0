"""Django admin of tools: same validation and same service as the Admin API; secrets not rendered."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
from django.test import Client

from chat.users.models import ChatUser
from tests.factories import INLINE_CODE, WEATHER_FUNCTION, ToolDefinitionFactory
from tools.models import ExecutionType, LifecycleStatus, ToolDefinition

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/tools/tooldefinition/add/"
SECRET = "admin-side-secret-4411"


@pytest.fixture
def browser() -> Client:
    client = Client()
    client.force_login(ChatUser.objects.create_superuser("staff-admin"))
    return client


def form_data(**overrides: Any) -> dict[str, Any]:
    data = {
        "tool_id": "weather@1",
        "execution_type": "inline",
        "name": "weather",
        "display_name": "Weather",
        "description": "Looks up the weather forecast",
        "supported_agent_frameworks": json.dumps(["hosted"]),
        "function_schema": json.dumps([WEATHER_FUNCTION]),
        "execution_timeout": "30",
        "function_arn": "",
        "url": "",
        "auth_client_id": "",
        "auth_client_secret": "",
        "auth_token_url": "",
        "code": INLINE_CODE,
        "lifecycle_status": "active",
        "deprecation_date_0": "",
        "deprecation_date_1": "",
        "migration_path": "",
        "access_rules": "null",
        "tags": "{}",
        "test_type": "",
        "_save": "Save",
    }
    data.update(overrides)
    return data


def change_url(tool_id: str) -> str:
    return f"/admin/tools/tooldefinition/{tool_id}/change/"


def page_text(response: Any) -> str:
    return html.unescape(response.content.decode())


def test_the_add_form_creates_a_tool_through_the_service(browser: Client) -> None:
    response = browser.post(ADD_URL, form_data())

    assert response.status_code == 302, page_text(response)[:3000]
    tool = ToolDefinition.objects.get()
    assert tool.tool_id == "weather@1"
    assert tool.version == 1
    assert tool.created_by == tool.last_modified_by == "staff-admin"
    assert tool.function_schema == [WEATHER_FUNCTION]
    assert tool.execution_timeout == 30


def test_an_empty_timeout_gets_the_default(browser: Client) -> None:
    assert browser.post(ADD_URL, form_data(execution_timeout="")).status_code == 302

    assert ToolDefinition.objects.get().execution_timeout == 30


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"description": "x" * 500}, "must be fewer than 500 characters"),
        ({"name": "get weather"}, "must match ^([0-9a-zA-Z][_-]?){1,100}$"),
        ({"tool_id": "weather"}, "must have the form <name>@<version>"),
        ({"supported_agent_frameworks": json.dumps(["other"])}, "must be ['hosted']"),
        ({"function_schema": "[]"}, "must be a non-empty list of function definitions"),
        (
            {"function_schema": json.dumps([{**WEATHER_FUNCTION, "parameters": {"p": {"type": "date"}}}])},
            "functionSchema[0].parameters.p.type",
        ),
        ({"execution_timeout": "901"}, "must be at most 900 seconds"),
        ({"execution_type": "function", "function_arn": "local:nope", "code": ""}, "no local function named 'nope' is registered"),
        ({"code": "(function () { while (true) {} })()"}, "must be a single JavaScript function expression"),
        ({"url": "https://mcp.example.com"}, "belongs to mcp tools and is not allowed when executionType is inline"),
        ({"access_rules": json.dumps([{"condition": "user.email ==", "effect": "allow"}])}, "accessRules[0].condition: not a valid CEL"),
        (
            {
                "execution_type": "mcp",
                "code": "",
                "url": "https://mcp.example.com",
                "auth_client_id": "c",
                "auth_token_url": "https://id.example.com/t",
            },
            "is required",
        ),
    ],
)
def test_the_add_form_refuses_what_the_api_refuses(browser: Client, overrides: dict[str, Any], message: str) -> None:
    response = browser.post(ADD_URL, form_data(**overrides))

    assert response.status_code == 200
    assert message in page_text(response)
    assert not ToolDefinition.objects.exists()


def test_the_change_form_saves_through_the_service(browser: Client) -> None:
    ToolDefinitionFactory(tool_id="weather@1", created_by="someone")

    response = browser.post(change_url("weather@1"), form_data(description="Edited in the admin"))

    assert response.status_code == 302, page_text(response)[:3000]
    tool = ToolDefinition.objects.get()
    assert tool.description == "Edited in the admin"
    assert tool.created_by == "someone"
    assert tool.last_modified_by == "staff-admin"


def test_the_change_form_refuses_to_reactivate_a_retired_tool(browser: Client) -> None:
    ToolDefinitionFactory(tool_id="weather@1", lifecycle_status=LifecycleStatus.RETIRED)

    response = browser.post(change_url("weather@1"), form_data(lifecycle_status="active"))

    assert response.status_code == 200
    assert "a retired tool cannot be reactivated; create a new version" in page_text(response)
    assert ToolDefinition.objects.get().lifecycle_status == LifecycleStatus.RETIRED


def mcp_tool() -> ToolDefinition:
    return ToolDefinitionFactory(
        tool_id="weather@1",
        execution_type=ExecutionType.MCP,
        code="",
        url="https://mcp.example.com/mcp",
        auth={"clientId": "weather-client", "clientSecret": SECRET, "tokenUrl": "https://id.example.com/token"},
    )


def mcp_form(**overrides: Any) -> dict[str, Any]:
    fields = {
        "execution_type": "mcp",
        "code": "",
        "url": "https://mcp.example.com/mcp",
        "auth_client_id": "weather-client",
        "auth_token_url": "https://id.example.com/token",
    }
    return form_data(**{**fields, **overrides})


def test_the_change_form_shows_the_secret_only_as_a_placeholder(browser: Client) -> None:
    mcp_tool()

    text = page_text(browser.get(change_url("weather@1")))

    assert SECRET not in text
    assert 'placeholder="******** (stored)"' in text


def test_saving_with_an_empty_secret_keeps_the_stored_one(browser: Client) -> None:
    mcp_tool()

    response = browser.post(change_url("weather@1"), mcp_form(description="New description"))

    assert response.status_code == 302, page_text(response)[:3000]
    tool = ToolDefinition.objects.get()
    assert tool.description == "New description"
    assert tool.auth["clientSecret"] == SECRET


def test_saving_with_a_new_secret_replaces_the_stored_one(browser: Client) -> None:
    mcp_tool()

    response = browser.post(change_url("weather@1"), mcp_form(auth_client_secret="rotated-in-admin"))

    assert response.status_code == 302
    assert ToolDefinition.objects.get().auth["clientSecret"] == "rotated-in-admin"


def test_emptying_every_oauth_field_removes_the_credentials(browser: Client) -> None:
    mcp_tool()

    response = browser.post(change_url("weather@1"), mcp_form(auth_client_id="", auth_token_url=""))

    assert response.status_code == 302
    assert ToolDefinition.objects.get().auth is None


def test_the_changelist_lists_filters_and_searches(browser: Client) -> None:
    ToolDefinitionFactory(tool_id="weather@1", description="Forecasts")
    ToolDefinitionFactory(tool_id="stocks@1", execution_type=ExecutionType.FUNCTION, code="", function_arn="local:echo")

    everything = page_text(browser.get("/admin/tools/tooldefinition/"))
    functions = page_text(browser.get("/admin/tools/tooldefinition/", {"execution_type__exact": "function"}))
    searched = page_text(browser.get("/admin/tools/tooldefinition/", {"q": "forecasts"}))

    assert "weather@1" in everything and "stocks@1" in everything
    for column in (
        "column-tool_id",
        "column-name",
        "column-execution_type",
        "column-lifecycle_status",
        "column-version",
        "column-test_type",
        "column-updated_at",
    ):
        assert column in everything
    assert "stocks@1" in functions and "weather@1" not in functions
    assert "weather@1" in searched and "stocks@1" not in searched


def test_deleting_in_the_admin_removes_the_tool(browser: Client) -> None:
    ToolDefinitionFactory(tool_id="weather@1")

    response = browser.post("/admin/tools/tooldefinition/weather@1/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not ToolDefinition.objects.exists()


@pytest.mark.parametrize("typed", ['[{"name": "get_weather", ', ""])
def test_the_change_form_refuses_malformed_or_empty_json_on_the_field_and_keeps_the_text(browser: Client, typed: str) -> None:
    ToolDefinitionFactory(tool_id="weather@1", description="Looks up the weather forecast")
    response = browser.post(change_url("weather@1"), form_data(function_schema=typed, description="Edited"))

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert list(form.errors) == ["function_schema"]
    assert form["function_schema"].value() == typed
    if typed:
        assert html.escape(typed) in response.content.decode()
    assert ToolDefinition.objects.get().description == "Looks up the weather forecast"


def test_a_syntax_error_in_inline_code_is_a_form_error_naming_line_and_column(browser: Client) -> None:
    code = "async (event, params) => {\n  const city = ;\n  return { city };\n}"
    response = browser.post(ADD_URL, form_data(code=code))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert "is not valid JavaScript at line 2, column 16" in errors["code"][0]
    assert not ToolDefinition.objects.exists()


def test_the_code_field_is_a_javascript_editor_with_syntax_highlighting(browser: Client) -> None:
    page = browser.get(ADD_URL).content.decode()
    assert 'class="vLargeTextField platform-code-editor"' in page
    for script in ("vendor/codemirror/codemirror.js", "vendor/codemirror/mode-javascript.js", "chatplatform/admin_editors.js"):
        assert script in page
    assert browser.get("/static/vendor/codemirror/mode-javascript.js").status_code == 200
