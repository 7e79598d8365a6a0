"""Inline JavaScript tools: the sandbox, its limits, and what reaches the model."""

from __future__ import annotations

import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from tests.factories import ToolDefinitionFactory, function
from tests.tools_exec.support import EVENT_BASE, USER
from tools.executors import ToolError
from tools.toolset import Toolset, toolset_for

pytestmark = pytest.mark.django_db

VALUE = {"value": {"description": "Anything", "type": "number", "required": False}}


def inline(code: str, *, timeout: float = 2) -> Toolset:
    tool = ToolDefinitionFactory(code=code, execution_timeout=timeout, function_schema=[function("run", VALUE)])
    return toolset_for(agent_tool_ids=[tool.tool_id], tool_overrides=None, user=USER, event_base=EVENT_BASE)


def run(code: str, arguments: dict[str, Any] | None = None, *, timeout: float = 2) -> Any:
    return async_to_sync(inline(code, timeout=timeout).specs[0].call)(arguments or {})


def failure(code: str, *, timeout: float = 2) -> ToolError:
    with pytest.raises(ToolError) as raised:
        run(code, timeout=timeout)
    return raised.value


def test_the_function_gets_the_event_and_the_parameters_and_its_json_is_the_result() -> None:
    result = run("(event, params) => ({ event, params, doubled: params.value * 2 })", {"value": 21})

    assert result["doubled"] == 42
    assert result["params"] == {"value": 21}
    assert result["event"]["parameters"] == {"value": 21}
    assert {key: result["event"][key] for key in ("userId", "sessionId", "chatAppId", "agentId", "timezone")} == {
        "userId": "alice",
        "sessionId": "session-1",
        "chatAppId": "support",
        "agentId": "helper",
        "timezone": "Europe/Paris",
    }
    assert result["event"]["function"] == "run"


def test_an_async_function_is_awaited() -> None:
    code = (
        "async (event, params) => {"
        " const a = await Promise.resolve(params.value); await null; return { a, later: await new Promise(r => r(a + 1)) } }"
    )

    assert run(code, {"value": 1}) == {"a": 1, "later": 2}


def test_an_endless_loop_is_stopped_at_the_timeout() -> None:
    started = time.perf_counter()
    error = failure("() => { while (true) {} }", timeout=0.3)

    assert 0.25 < time.perf_counter() - started < 1.5
    assert error.outcome == "timeout"
    # Usually "did not answer within 0.3 s"; QuickJS counts CPU time of the whole process, so if
    # another thread was busy meanwhile it says the code was stopped early, and why.
    assert "0.3 s" in str(error) and "executionTimeout" in str(error)


def test_catching_the_interruption_does_not_escape_the_timeout() -> None:
    error = failure("() => { for (;;) { try { while (true) {} } catch (e) {} } }", timeout=0.2)

    assert error.outcome == "timeout"


def test_an_async_function_that_never_stops_scheduling_work_is_stopped_at_the_timeout() -> None:
    started = time.perf_counter()
    error = failure("async () => { while (true) { await null } }", timeout=0.3)

    assert time.perf_counter() - started < 1.5
    assert error.outcome == "timeout"


def test_a_memory_bomb_is_stopped(settings: Any) -> None:
    settings.CHAT_INLINE_MEMORY_MB = 16
    error = failure("() => { const hoard = []; while (true) hoard.push('x'.repeat(1e5) + hoard.length) }", timeout=5)

    assert str(error) == "out of memory: inline tools are limited to 16 MB"


def test_unbounded_recursion_is_stopped_by_the_stack_limit() -> None:
    error = failure("function down(n) { return down(n + 1) + 1 }")

    assert str(error).startswith("stack overflow: inline tools are limited to")


@pytest.mark.parametrize("name", ["require", "process", "fetch", "XMLHttpRequest", "setTimeout", "setInterval", "std", "os", "Deno", "Bun"])
def test_host_apis_do_not_exist_in_the_sandbox(name: str) -> None:
    assert run(f"() => typeof {name}") == "undefined"
    assert str(failure(f"() => {name}")) == f"ReferenceError: {name} is not defined"


@pytest.mark.parametrize("module", ["os", "std", "fs", "node:child_process", "https://example.com/x.js"])
def test_dynamic_import_of_any_module_fails(module: str) -> None:
    error = failure(f"async () => await import({module!r})")

    assert str(error) == f"ReferenceError: could not load module '{module}'"


def test_a_thrown_error_becomes_an_error_result() -> None:
    assert str(failure("() => { throw new TypeError('the city is unknown') }")) == "TypeError: the city is unknown"
    assert str(failure("async () => { throw new RangeError('late') }")) == "RangeError: late"
    assert str(failure("() => { throw 'a plain string' }")) == "a plain string"
    assert str(failure("() => { throw { code: 42 } }")) == 'threw {"code":42}'


def test_a_global_set_in_one_call_is_gone_in_the_next() -> None:
    toolset = inline(
        "() => { const seen = [globalThis.counter ?? null, ({}).leak ?? null];"
        " globalThis.counter = 1; Object.prototype.leak = 1; return seen }"
    )
    call = async_to_sync(toolset.specs[0].call)

    assert call({}) == [None, None]
    assert call({}) == [None, None]


def test_a_value_without_json_is_null_and_one_that_cannot_be_converted_is_an_error() -> None:
    assert run("() => undefined") is None
    assert run("() => [1, undefined, () => 1]") == [1, None, None]
    assert "cannot be converted to JSON" in str(failure("() => 10n"))
    assert "cannot be converted to JSON" in str(failure("() => { const a = {}; a.self = a; return a }"))


def test_a_result_over_the_size_limit_is_refused_inside_the_engine(settings: Any) -> None:
    settings.CHAT_TOOL_RESULT_MAX_BYTES = 4096

    assert run("() => 'x'.repeat(4000)") == "x" * 4000
    assert "over the limit of 4096 bytes" in str(failure("() => 'x'.repeat(5000)"))
    assert "over the limit of 4096 bytes" in str(failure("() => 'é'.repeat(3000)"))  # 6002 bytes in 3002 characters


def test_a_promise_that_never_settles_is_an_error_at_once() -> None:
    started = time.perf_counter()
    error = failure("() => new Promise(() => {})", timeout=5)

    assert time.perf_counter() - started < 1
    assert "never settled" in str(error)


def test_console_calls_are_accepted_and_go_nowhere() -> None:
    assert run("() => { console.log('debugging', 1); console.error('x'); return 'done' }") == "done"


def test_code_that_is_not_a_function_is_an_error_result() -> None:
    assert str(failure("42")) == "code is not a JavaScript function"
    assert str(failure("() => {")).startswith("SyntaxError: ")
