"""`inline` tools: `code` must be one JavaScript function expression, checked without running it."""

from __future__ import annotations

import time

import pytest
from rest_framework.test import APIClient

from tests.conftest import assert_error
from tests.factories import tool_payload
from tools.models import ToolDefinition

pytestmark = pytest.mark.django_db

NOT_A_FUNCTION = "tool.code: must be a single JavaScript function expression"


def upsert_code(client: APIClient, code: str) -> object:
    return client.post("/api/chat-admin/tool", {"tool": tool_payload("inline", code=code)}, format="json")


@pytest.mark.parametrize(
    "code",
    [
        "function(event, params) { return 1 }",
        "async (event, params) => params.x",
        "async function handler(event, params) { const r = /[)}]/g; return `${params.x}}`.replace(r, '') }",
        "(event, params) => ({ total: params.a / params.b })",
        "event => event.userId",
        "(function (event, params) { return params })",
        "/* comment */ function (event, params) { return '})' } // trailing",
    ],
)
def test_a_function_expression_is_accepted(admin_client: APIClient, code: str) -> None:
    response = upsert_code(admin_client, code)

    assert response.status_code == 200, response.json()
    assert response.json()["tool"]["code"] == code


@pytest.mark.parametrize(
    ("code", "mentions"),
    [
        ("return 1;", "tool.code: is not valid JavaScript at line 1, column 1: SyntaxError"),
        ("}{", "tool.code: is not valid JavaScript at line 1, column 1: SyntaxError"),
        ("function (event, params) { return 1", "tool.code: is not valid JavaScript (at the end of the code): SyntaxError"),
        ("async (e, p) => {\n  const n = ;\n}", "tool.code: is not valid JavaScript at line 2, column 13: SyntaxError"),
        ("1 + 1", NOT_A_FUNCTION),
        ("params.x", NOT_A_FUNCTION),
        ("class Handler {}", NOT_A_FUNCTION),
        ("async (event)", NOT_A_FUNCTION),
        ("x => x, 2", NOT_A_FUNCTION),
        ("   ", "tool.code: is required"),
    ],
)
def test_code_that_is_not_a_function_expression_is_refused(admin_client: APIClient, code: str, mentions: str) -> None:
    assert_error(upsert_code(admin_client, code), 400, "INVALID_REQUEST", mentions=mentions)
    assert not ToolDefinition.objects.exists()


@pytest.mark.parametrize(
    "code",
    [
        "(function () { while (true) {} })()",
        "(function () { while (true) {} }())",
        "(() => { while (true) {} })()",
        "x => 1, (function () { while (true) {} })()",
        "function () {}); while (true) {}; (function () {",
        "1); } while (true) {} function again() { return (1",
        "(function () { throw new Error('the code ran') })()",
    ],
)
def test_checking_code_never_runs_it(admin_client: APIClient, code: str) -> None:
    started = time.monotonic()

    body = assert_error(upsert_code(admin_client, code), 400, "INVALID_REQUEST", mentions="tool.code:")

    # Had the code run, the engine's time limit would have interrupted it ("interrupted"), or its
    # error would show; the refusal names the form instead, and comes well before any limit.
    assert "interrupted" not in body["error"]
    assert "the code ran" not in body["error"]
    assert time.monotonic() - started < 5
