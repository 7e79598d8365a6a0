"""The MCP door through the official `mcp` client (docs/doors.md, "MCP"): a platform process on
loopback, the client's Streamable HTTP transport with a bearer token, each chat app the caller may
use a tool `ask_<chatAppId>` whose call is a turn of the Chat API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import orjson
import pytest
from asgiref.sync import sync_to_async
from mcp.client import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from chat.models import ChatSession
from chat.users.models import ChatUser
from chat.webhooks.models import WebhookDelivery
from tests.conftest import bearer_token
from tests.factories import ChatAppFactory, ChatSessionFactory
from tests.peers import Reply
from tests.servers import ServerProcess, asgi_server, database_url_of_test_db

WEBHOOKS = '[{"url": "http://127.0.0.1:9/hook", "events": ["session.created"], "secret": "s"}]'

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.django_db(transaction=True)]


@pytest.fixture
def platform_env() -> dict[str, str]:
    """More of the platform process's environment, for a test to set."""
    return {}


@pytest.fixture
def platform(openai_server: Any, transactional_db: None, platform_env: dict[str, str]) -> Iterator[ServerProcess]:
    """The platform in a process of its own, on this test's database, its model the scripted server.
    Chat apps: `support` for everyone, `team-desk` for internal users only."""
    ChatAppFactory(
        chat_app_id="support",
        title="Support",
        description="Answers questions about your orders.",
        agent__agent_id="helper",
        agent__foundation_model="openai:test-model",
    )
    ChatAppFactory(
        chat_app_id="team-desk",
        title="Team desk",
        user_types=["internal-user"],
        agent__agent_id="desk",
        agent__foundation_model="openai:test-model",
    )
    env = {
        "DATABASE_URL": database_url_of_test_db(),
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "k",
        "CHAT_TITLE_MODEL": "offline",
        "LOG_LEVEL": "WARNING",
        **platform_env,
    }
    with asgi_server(env) as server:
        yield server


@asynccontextmanager
async def mcp_session(
    server: ServerProcess, token: str | None, answers: list[httpx2.Response] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP session (the initialize handshake) with `token` as its bearer token;
    `answers` collects the HTTP responses the client received."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def received(response: httpx2.Response) -> None:
        if answers is not None:
            answers.append(response)

    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, event_hooks={"response": [received]}) as http,
        streamable_http_client(f"{server.url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def alice() -> str:
    return bearer_token("alice")


def staff() -> str:
    return bearer_token("carol", user_type="internal-user")


def chat_api(server: ServerProcess, path: str, token: str) -> dict[str, Any]:
    response = httpx.get(f"{server.url}{path}", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    return response.json()


async def test_each_chat_app_the_caller_may_use_is_a_tool(platform):
    async with mcp_session(platform, alice()) as session:
        listed = await session.list_tools()
    async with mcp_session(platform, staff()) as session:
        listed_for_staff = await session.list_tools()

    assert [tool.name for tool in listed.tools] == ["ask_support"]
    tool = listed.tools[0]
    assert (tool.title, tool.description) == ("Support", "Answers questions about your orders.")
    assert tool.input_schema["required"] == ["message"]
    assert set(tool.input_schema["properties"]) == {"message", "sessionId"}
    assert [tool.name for tool in listed_for_staff.tools] == ["ask_support", "ask_team_desk"]


@pytest.mark.parametrize("platform_env", [{"CHAT_WEBHOOKS": WEBHOOKS}])
async def test_a_call_is_a_turn_of_the_chat_app_and_continues_its_session(platform, openai_server):
    openai_server.script([Reply(text="Your order ships today."), Reply(text="Tomorrow at noon.")])

    async with mcp_session(platform, alice()) as session:
        first = await session.call_tool("ask_support", {"message": "Where is my order?"})
        session_id = first.structured_content["sessionId"]
        second = await session.call_tool("ask_support", {"message": "And when does it arrive?", "sessionId": session_id})

    assert not first.is_error
    assert [block.text for block in first.content] == ["Your order ships today."]
    assert first.structured_content["citations"] == []
    assert [block.text for block in second.content] == ["Tomorrow at noon."]
    assert second.structured_content["sessionId"] == session_id
    sessions = chat_api(platform, "/api/chat/sessions", alice())["sessions"]
    assert [(s["sessionId"], s["chatAppId"], s["agentId"]) for s in sessions] == [(session_id, "support", "helper")]
    messages = chat_api(platform, f"/api/chat/sessions/{session_id}/messages", alice())["messages"]
    assert [(m["source"], m["message"]) for m in messages] == [
        ("user", "Where is my order?"),
        ("assistant", "Your order ships today."),
        ("user", "And when does it arrive?"),
        ("assistant", "Tomorrow at noon."),
    ]
    assert messages[1]["messageId"] == first.structured_content["messageId"]
    # The model saw the session's history on the second turn.
    assert "Your order ships today." in str(openai_server.requests[-1]["messages"])
    deliveries = [(d.event, str(d.session_id)) async for d in WebhookDelivery.objects.all()]
    assert deliveries == [("session.created", session_id)]


async def test_the_answer_streams_as_progress_notifications(platform, openai_server):
    words = [f"word{n} " for n in range(30)]
    openai_server.script([Reply(chunks=words, token_delay=0.02)])
    seen: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, message))

    async with mcp_session(platform, alice()) as session:
        result = await session.call_tool("ask_support", {"message": "Count"}, progress_callback=progress)

    answer = "".join(words)
    assert result.content[0].text == answer
    assert "".join(message or "" for _, message in seen) == answer
    assert [value for value, _ in seen] == sorted({value for value, _ in seen})  # increasing
    assert seen[-1][0] == len(answer)
    assert seen[0][1] == "word0 "  # the first text at once
    assert 3 <= len(seen) < len(words)  # the rest a few at a time


async def test_a_chat_app_the_caller_may_not_use_is_not_a_tool_as_an_unknown_one(platform, openai_server):
    async with mcp_session(platform, alice()) as session:
        with pytest.raises(MCPError) as refused:
            await session.call_tool("ask_team_desk", {"message": "hello"})
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("ask_nothing_here", {"message": "hello"})
        with pytest.raises(MCPError) as other:
            await session.call_tool("search", {"query": "hello"})

    assert refused.value.code == unknown.value.code == types.INVALID_PARAMS
    assert refused.value.message == "Unknown tool: ask_team_desk"
    assert unknown.value.message == "Unknown tool: ask_nothing_here"
    assert other.value.message == "Unknown tool: search"
    assert openai_server.requests == []
    assert not await ChatSession.objects.aexists()


@pytest.mark.parametrize("token", [None, "not-a-token"], ids=["no token", "invalid token"])
async def test_without_valid_credentials_the_client_is_refused_with_401(platform, token):
    with pytest.raises(ExceptionGroup) as refused:  # the client's task groups wrap what it raises
        async with mcp_session(platform, token):
            pass
    assert refused.group_contains(MCPError, match="authentication credentials were not provided|invalid token", depth=None)

    response = httpx.post(
        f"{platform.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


async def test_a_refused_turn_is_the_tools_error_naming_why(platform, openai_server):
    await ChatUser.objects.acreate(user_id="bob")
    session_of_bob = await sync_to_async(ChatSessionFactory)(user_id="bob")

    async with mcp_session(platform, alice()) as session:
        blank = await session.call_tool("ask_support", {"message": "   "})
        missing = await session.call_tool("ask_support", {})
        not_hers = await session.call_tool("ask_support", {"message": "hi", "sessionId": str(session_of_bob.pk)})

    assert blank.is_error and "message" in blank.content[0].text and "INVALID_REQUEST" in blank.content[0].text
    assert missing.is_error and "message" in missing.content[0].text
    assert not_hers.is_error and "INVALID_SESSION_ID" in not_hers.content[0].text
    assert openai_server.requests == []


async def test_a_turn_that_fails_is_the_tools_error(platform, openai_server):
    openai_server.script([Reply(status=500), Reply(status=500), Reply(status=500)])

    async with mcp_session(platform, alice()) as session:
        result = await session.call_tool("ask_support", {"message": "hello"})

    assert result.is_error
    assert result.structured_content is None


async def test_a_client_of_the_2026_protocol_lists_and_calls_without_a_handshake(platform, openai_server):
    openai_server.script([Reply(text="Hello from the agent.")])
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {alice()}"}, timeout=60) as http,
        Client(streamable_http_client(f"{platform.url}/mcp", http_client=http), mode="auto") as client,
    ):
        assert client.protocol_version in MODERN_PROTOCOL_VERSIONS  # server/discover, no initialize
        tools = await client.list_tools()
        result = await client.call_tool("ask_support", {"message": "Hi"})

    assert [tool.name for tool in tools.tools] == ["ask_support"]
    assert result.content[0].text == "Hello from the agent."


async def test_get_opens_the_servers_stream_for_a_caller(platform):
    headers = {"Accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=platform.url, timeout=10) as http:
        async with http.stream("GET", "/mcp", headers={**headers, "Authorization": f"Bearer {alice()}"}) as stream:
            opened = (stream.status_code, stream.headers["content-type"])
        anonymous = await http.get("/mcp", headers=headers)

    assert opened[0] == 200 and opened[1].startswith("text/event-stream")
    assert anonymous.status_code == 401


# An hour's window: a minute's could end mid-test and give the budget back.
@pytest.mark.parametrize("platform_env", [{"CHAT_RATE_LIMITS": '{"chat": 6}', "CHAT_RATE_LIMIT_WINDOW_SECONDS": "3600"}])
async def test_each_request_counts_once_against_the_chat_api_rate_limit(platform, openai_server):
    openai_server.script([Reply(text="Once.")])
    answers: list[httpx2.Response] = []

    async with mcp_session(platform, alice(), answers) as session:
        await session.list_tools()
        await session.call_tool("ask_support", {"message": "Hi"})
        with pytest.raises(MCPError) as refused:
            for _ in range(5):  # until the budget runs out
                await session.list_tools()

    methods = [orjson.loads(answer.request.content)["method"] for answer in answers]
    remaining = [int(answer.headers["X-RateLimit-Remaining"]) for answer in answers]
    assert methods[:4] == ["initialize", "notifications/initialized", "tools/list", "tools/call"]
    assert remaining == [5, 4, 3, 2, 1, 0, 0]  # one per request, the tool call (a turn) included
    assert answers[-1].status_code == 429
    assert answers[-1].headers["Retry-After"]
    assert "rate limit" in refused.value.message.lower()
    assert await ChatSession.objects.acount() == 1


async def test_a_turn_stopped_by_its_user_answers_with_the_text_so_far(platform, openai_server):
    words = [f"word{n} " for n in range(100)]
    openai_server.script([Reply(text="Hello."), Reply(chunks=words, token_delay=0.03)])
    started = anyio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    async with mcp_session(platform, alice()) as session:
        first = await session.call_tool("ask_support", {"message": "Hi"})
        session_id = first.structured_content["sessionId"]
        async with anyio.create_task_group() as tasks:
            results = []

            async def call() -> None:
                arguments = {"message": "Tell me a long story", "sessionId": session_id}
                results.append(await session.call_tool("ask_support", arguments, progress_callback=progress))

            tasks.start_soon(call)
            await started.wait()
            async with httpx.AsyncClient(base_url=platform.url) as http:
                stopped = await http.post(f"/api/chat/sessions/{session_id}/stop", json={}, headers={"Authorization": f"Bearer {alice()}"})

    assert stopped.json()["stopped"] is True
    [result] = results
    assert not result.is_error
    text = result.content[0].text
    assert text.startswith("word0 ") and len(text) < len("".join(words))
    messages = chat_api(platform, f"/api/chat/sessions/{session_id}/messages", alice())["messages"]
    assert (messages[-1]["messageId"], messages[-1]["message"]) == (result.structured_content["messageId"], text)
