"""MCP tools against a real MCP server on loopback, behind a bearer check, with a token endpoint."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync

from tests.factories import ADD_FUNCTION, ToolDefinitionFactory, function
from tests.peers.mcp_server import McpPeer
from tests.tools_exec.support import EVENT_BASE, USER
from tools.executors import ToolError
from tools.models import ExecutionType, ToolDefinition
from tools.toolset import Toolset, toolset_for

pytestmark = pytest.mark.django_db

FUNCTIONS = [
    ADD_FUNCTION,
    function("whoami"),
    function("event"),
    function("slow", {"seconds": {"description": "How long", "type": "number", "required": True}}),
    function("fail", {"message": {"description": "Why", "type": "string", "required": True}}),
    function("nosuch"),
]


def mcp_tool(url: str, *, auth: dict[str, str] | None = None, timeout: float = 5) -> ToolDefinition:
    return ToolDefinitionFactory(
        execution_type=ExecutionType.MCP, code="", url=url, auth=auth, execution_timeout=timeout, function_schema=FUNCTIONS
    )


def offer(tool: ToolDefinition) -> Toolset:
    return toolset_for(agent_tool_ids=[tool.tool_id], tool_overrides=None, user=USER, event_base=EVENT_BASE)


def call(toolset: Toolset, name: str, arguments: dict[str, Any] | None = None) -> Any:
    spec = next(spec for spec in toolset.specs if spec.name == name)
    return async_to_sync(spec.call)(arguments or {})


def failure(toolset: Toolset, name: str, arguments: dict[str, Any] | None = None) -> ToolError:
    with pytest.raises(ToolError) as raised:
        call(toolset, name, arguments)
    return raised.value


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_server_tool_of_the_functions_name_answers_with_its_result(mcp_peer: McpPeer) -> None:
    toolset = offer(mcp_tool(mcp_peer.url, auth=mcp_peer.auth()))

    assert call(toolset, "add", {"a": 2, "b": 3.5}) == {"result": 5.5}
    assert mcp_peer.calls[-1].tool == "add" and mcp_peer.calls[-1].arguments == {"a": 2, "b": 3.5}
    assert toolset.traces[0].outcome == "ok"


def test_one_token_serves_several_calls_and_turns(mcp_peer: McpPeer) -> None:
    tool = mcp_tool(mcp_peer.url, auth=mcp_peer.auth())
    first_turn, second_turn = offer(tool), offer(tool)

    tokens = [call(first_turn, "whoami")["result"] for _ in range(3)] + [call(second_turn, "whoami")["result"]]

    assert mcp_peer.tokens_issued == 1
    assert len(set(tokens)) == 1 and tokens[0].startswith("token-")
    assert mcp_peer.unauthorized == 0


def test_concurrent_first_calls_wait_for_one_token(mcp_peer: McpPeer) -> None:
    toolset = offer(mcp_tool(mcp_peer.url, auth=mcp_peer.auth()))
    whoami = next(spec for spec in toolset.specs if spec.name == "whoami")

    async def five_at_once() -> list[Any]:
        return await asyncio.gather(*(whoami.call({}) for _ in range(5)))

    results = async_to_sync(five_at_once)()

    assert mcp_peer.tokens_issued == 1
    assert len({result["result"] for result in results}) == 1


def test_an_expired_token_is_replaced_before_the_call(mcp_peer: McpPeer) -> None:
    mcp_peer.token_lifetime = 0.2  # kept until half its lifetime is left (at most 30 s before it expires)
    toolset = offer(mcp_tool(mcp_peer.url, auth=mcp_peer.auth()))
    first = call(toolset, "whoami")["result"]
    time.sleep(0.15)

    second = call(toolset, "whoami")["result"]

    assert first != second
    assert mcp_peer.tokens_issued == 2
    assert mcp_peer.unauthorized == 0  # replaced before use, not after a refusal


def test_a_401_fetches_a_new_token_once_and_retries(mcp_peer: McpPeer) -> None:
    toolset = offer(mcp_tool(mcp_peer.url, auth=mcp_peer.auth()))
    before = call(toolset, "whoami")["result"]
    mcp_peer.rotate_tokens()

    after = call(toolset, "whoami")["result"]

    assert after != before
    assert mcp_peer.tokens_issued == 2
    assert mcp_peer.unauthorized == 1
    assert [trace.outcome for trace in toolset.traces] == ["ok", "ok"]


def test_calls_on_one_warm_session_each_refresh_with_their_own_credentials(mcp_peer: McpPeer) -> None:
    toolset = offer(mcp_tool(mcp_peer.url, auth=mcp_peer.auth()))
    whoami = next(spec for spec in toolset.specs if spec.name == "whoami")

    async def three_calls_on_one_loop() -> list[str]:
        first = (await whoami.call({}))["result"]
        mcp_peer.rotate_tokens()
        second = (await whoami.call({}))["result"]
        third = (await whoami.call({}))["result"]
        return [first, second, third]

    first, second, third = async_to_sync(three_calls_on_one_loop)()

    assert first != second == third
    assert (mcp_peer.tokens_issued, mcp_peer.unauthorized) == (2, 1)
    assert [trace.outcome for trace in toolset.traces] == ["ok", "ok", "ok"]


def test_a_server_that_refuses_every_token_is_an_error_result_after_one_refresh(mcp_peer: McpPeer) -> None:
    tool = mcp_tool(mcp_peer.url, auth=mcp_peer.auth())
    toolset = offer(tool)
    call(toolset, "whoami")
    mcp_peer.token_lifetime = -1  # issued already expired: refused by the server

    mcp_peer.rotate_tokens()
    error = failure(toolset, "whoami")

    assert "refused the access token (HTTP 401), also a newly fetched one" in str(error)
    assert mcp_peer.tokens_issued == 2


def test_wrong_client_credentials_are_an_error_result_naming_the_token_endpoint(mcp_peer: McpPeer) -> None:
    toolset = offer(mcp_tool(mcp_peer.url, auth={**mcp_peer.auth(), "clientSecret": "wrong"}))

    error = failure(toolset, "whoami")

    assert str(error) == "the tool's tokenUrl refused to issue an access token (HTTP 401 invalid_client)"
    assert mcp_peer.calls == []


def test_a_server_that_needs_a_token_refuses_a_tool_without_auth(mcp_peer: McpPeer) -> None:
    error = failure(offer(mcp_tool(mcp_peer.url)), "whoami")

    assert "requires authentication (HTTP 401) and the tool has no auth configured" in str(error)


def test_a_server_without_a_bearer_check_needs_no_auth(mcp_peer: McpPeer) -> None:
    mcp_peer.require_token = False

    assert call(offer(mcp_tool(mcp_peer.url)), "add", {"a": 1, "b": 1}) == {"result": 2.0}


def test_an_unreachable_server_is_an_error_result_at_once() -> None:
    url = f"http://127.0.0.1:{unused_port()}/mcp"
    toolset = offer(mcp_tool(url, timeout=3))
    started = time.perf_counter()

    error = failure(toolset, "add", {"a": 1, "b": 2})

    assert time.perf_counter() - started < 2
    assert str(error).startswith("could not connect to the MCP server at http://127.0.0.1:")
    assert toolset.traces[0].outcome == "error"


def test_a_slow_server_is_a_timeout_result_within_the_execution_timeout(mcp_peer: McpPeer) -> None:
    toolset = offer(mcp_tool(mcp_peer.url, auth=mcp_peer.auth(), timeout=0.3))
    slow = next(spec for spec in toolset.specs if spec.name == "slow")

    async def call_then_linger() -> tuple[ToolError, float]:
        started = time.perf_counter()
        with pytest.raises(ToolError) as raised:
            await slow.call({"seconds": 5})
        elapsed = time.perf_counter() - started
        await asyncio.sleep(0.05)  # the client sends its cancellation notice before this test's loop closes
        return raised.value, elapsed

    error, elapsed = async_to_sync(call_then_linger)()

    assert elapsed < 1.2
    assert error.outcome == "timeout"
    assert str(error) == "the tool did not answer within 0.3 s (its executionTimeout)"
    assert toolset.traces[0].outcome == "timeout"


def test_a_tool_error_of_the_server_is_an_error_result_with_its_message(mcp_peer: McpPeer) -> None:
    toolset = offer(mcp_tool(mcp_peer.url, auth=mcp_peer.auth()))

    assert "the ledger is closed" in str(failure(toolset, "fail", {"message": "the ledger is closed"}))
    assert "Unknown tool: nosuch" in str(failure(toolset, "nosuch"))


def test_the_event_reaches_the_server_in_the_request_meta(mcp_peer: McpPeer) -> None:
    tool = mcp_tool(mcp_peer.url, auth=mcp_peer.auth())

    meta = call(offer(tool), "event")

    assert meta["chatplatform/event"] == {
        "toolId": tool.tool_id,
        "function": "event",
        "userId": "alice",
        "sessionId": "session-1",
        "chatAppId": "support",
        "agentId": "helper",
        "customData": {"accountId": "acme", "plan": "gold"},
        "timezone": "Europe/Paris",
    }


def test_the_model_never_sees_the_servers_full_url(mcp_peer: McpPeer) -> None:
    url = f"http://127.0.0.1:{unused_port()}/mcp?api_key=secret-key"

    error = failure(offer(mcp_tool(url, timeout=3)), "add", {"a": 1, "b": 2})

    assert "secret-key" not in str(error)
