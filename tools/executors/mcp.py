"""`mcp` tools: the server tool named like the function, called over Streamable HTTP (docs/api.md, "Tools").

Calls go through the official `mcp` client. What a call costs beyond its one `tools/call` POST
is reused across calls:

- a warm client session per tool and event loop (see _Session), closed after a minute unused;
- one HTTP client, and so one pool of keep-alive connections, per event loop for every MCP tool;
- the protocol negotiation: the first session with a URL negotiates (`server/discover`, or the
  older `initialize` handshake), later sessions pin the negotiated version and skip it;
- the bearer token (tools.executors.oauth): fetched once, shared through the cache.

The calling task fetches the token, then the shared client's auth flow adds it to each request
it sends; the flow reads the call from a context variable (the SDK runs a request's HTTP exchange
in the context of the task that sent it). A 401 makes the flow fetch a new token and resend,
once per call. The result is the tool's `structuredContent` when it has one, else its text (one
string, or a list of content blocks). An MCP tool error (`isError`), a protocol error, an
unreachable server and the timeout (connection and call together) are ToolErrors. A call is
never sent twice, except when a stateful server had forgotten the session (it never ran).
The event of docs/api.md "Tools in a turn", without the parameters (they are the call's arguments), travels in the
request's `_meta` under `chatplatform/event` for servers that want to know who asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncGenerator, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION

from tools.executors import ToolError, loop_local, timed_out
from tools.executors.oauth import access_token, cache_key

EVENT_META_KEY = "chatplatform/event"
_CLIENT_INFO = types.Implementation(name="chatplatform", version="1.2.0")
_NEGOTIATION_TTL_SECONDS = 600.0
_IDLE_SECONDS = 60.0  # a warm session without calls for this long is closed
_CAUSE_GRACE_SECONDS = 0.1
_HTTP_TIMEOUT_SECONDS = 900.0  # the executionTimeout ceiling; each call is bounded by its own timeout


@dataclass
class _CallState:
    """What the auth flow needs and learns during one call."""

    tool_id: str
    auth: Mapping[str, Any] | None
    token: str | None = None
    refreshed: bool = False
    token_error: Exception | None = None  # a refresh that failed inside the auth flow
    error_status: int | None = None  # the last HTTP status >= 400 the server answered


_current: contextvars.ContextVar[_CallState | None] = contextvars.ContextVar("mcp_tool_call", default=None)


class _BearerFromContext(httpx2.Auth):
    """Adds the calling tool's bearer token; on 401 fetches a new one and resends, once per call.

    It never raises: an exception here would end the transport's task group, and with it every
    call sharing the session. A failed refresh is kept on the call and the 401 goes through.
    """

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        yield request  # the shared client is only used asynchronously

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        call = _current.get()
        if call is not None and call.token is not None:
            request.headers["Authorization"] = f"Bearer {call.token}"
        response = yield request
        if call is None:
            return
        if response.status_code == 401 and call.auth is not None and not call.refreshed:
            call.refreshed = True
            try:
                call.token = await access_token(tool_id=call.tool_id, auth=call.auth, http=_http(), stale=call.token)
            except Exception as exc:
                call.token_error = exc
            else:
                request.headers["Authorization"] = f"Bearer {call.token}"
                response = yield request
        if response.status_code >= 400:
            call.error_status = response.status_code


_clients: dict[asyncio.AbstractEventLoop, httpx2.AsyncClient] = {}


def _http() -> httpx2.AsyncClient:
    return loop_local(
        _clients,
        lambda: httpx2.AsyncClient(
            auth=_BearerFromContext(),
            timeout=httpx2.Timeout(_HTTP_TIMEOUT_SECONDS),
            limits=httpx2.Limits(max_connections=200, max_keepalive_connections=50, keepalive_expiry=30),
        ),
    )


@dataclass
class _Negotiated:
    mode: str  # a pinned protocol version, or "legacy" (an initialize handshake per session)
    discover: types.DiscoverResult | None
    until: float = field(default_factory=lambda: time.monotonic() + _NEGOTIATION_TTL_SECONDS)


_negotiated: dict[str, _Negotiated] = {}


class _Session:
    """A warm MCP client session, shared by the calls of one tool on one event loop.

    The `mcp` client's session lives in task groups that must be entered and left by one task,
    so an owner task holds it open; calls send their requests through it from their own tasks.
    The SDK runs each request's HTTP exchange in the sending task's context, so the bearer flow
    sees the calling tool call's credentials. The owner closes the session after
    _IDLE_SECONDS without calls, or once a failed call has marked it stale.
    """

    def __init__(self, url: str, connect_timeout: float) -> None:
        self.url = url
        self.connect_timeout = connect_timeout
        self.ready = asyncio.Event()
        self.done = asyncio.Event()
        self.client: Client | None = None
        self.error: Exception | None = None
        self.stale = False
        self.in_flight = 0
        self.served = 0
        self.last_used = time.monotonic()
        self.task: asyncio.Task[None] | None = None

    def usable(self) -> bool:
        return not self.stale and not self.done.is_set()

    def release(self, *, failed: bool = False) -> None:
        self.in_flight -= 1
        self.last_used = time.monotonic()
        if failed:
            self.stale = True
        if self.stale and self.in_flight == 0:
            self.done.set()

    async def own(self) -> None:
        known = _negotiated.get(self.url)
        if known is not None and known.until < time.monotonic():
            known = None
        mode, discover = (known.mode, known.discover) if known else ("auto", None)
        transport = streamable_http_client(self.url, http_client=_http())
        try:
            async with contextlib.AsyncExitStack() as stack:
                async with asyncio.timeout(self.connect_timeout):
                    client = await stack.enter_async_context(
                        Client(transport, mode=mode, prior_discover=discover, cache=None, client_info=_CLIENT_INFO)
                    )
                if known is None:
                    session = client.session
                    if session.discover_result is not None and session.protocol_version:
                        _negotiated[self.url] = _Negotiated(session.protocol_version, session.discover_result)
                    else:
                        _negotiated[self.url] = _Negotiated("legacy", None)
                self.client = client
                self.ready.set()
                while not self.done.is_set():
                    try:
                        async with asyncio.timeout(_IDLE_SECONDS):
                            await self.done.wait()
                    except TimeoutError:
                        if self.in_flight == 0 and time.monotonic() - self.last_used >= _IDLE_SECONDS:
                            break
        except Exception as exc:  # the first caller (and any waiting with it) reports it
            self.error = exc
        finally:
            self.client = None
            self.done.set()
            self.ready.set()


_sessions: dict[asyncio.AbstractEventLoop, dict[tuple[str, str], _Session]] = {}
_owners: set[asyncio.Task[None]] = set()


async def _acquire(key: tuple[str, str], url: str, timeout: float) -> _Session:
    sessions = loop_local(_sessions, dict)
    session = sessions.get(key)
    if session is None or not session.usable():
        session = sessions[key] = _Session(url, timeout)
        # The owner inherits this call's context: its own requests (negotiation) use this call's token.
        session.task = asyncio.create_task(session.own(), name=f"mcp-session {_origin(url)}")
        _owners.add(session.task)  # the loop keeps only weak references to tasks
        session.task.add_done_callback(_owners.discard)
    session.in_flight += 1
    try:
        await session.ready.wait()
    except BaseException:
        session.release()
        raise
    if session.client is None:
        session.release(failed=True)
        if sessions.get(key) is session:
            del sessions[key]
        raise session.error or ToolError(f"the session with the MCP server at {_origin(url)} closed before it was ready")
    return session


async def _with_cause(session: _Session, exc: Exception) -> Exception:
    """`exc`, or what ended the session under it: a transport failure (an unreachable server)
    ends the owner's task group, and the call itself only sees "Connection closed"."""
    if session.task is not None and not session.task.done():
        await asyncio.wait([session.task], timeout=_CAUSE_GRACE_SECONDS)
    if session.error is not None:
        return ExceptionGroup("the MCP session failed", [exc, session.error])
    return exc


def _session_terminated(exc: BaseException) -> bool:
    # A stateful (pre-2026) server forgot the session: the call never reached the tool, so it is
    # safe to send again on a new session. No other failure is retried: a tool may have side effects.
    return any(isinstance(e, MCPError) and e.code == INVALID_REQUEST and e.message == "Session terminated" for e in _leaves(exc))


async def _call(
    key: tuple[str, str], url: str, name: str, arguments: dict[str, Any], meta: dict[str, Any], timeout: float
) -> types.CallToolResult:
    # `_meta` is an open TypedDict (PEP 728 extra_items), which mypy does not read yet.
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments, _meta=meta))  # type: ignore[arg-type]
    for attempt in range(2):
        session = await _acquire(key, url, timeout)
        assert session.client is not None
        reused = session.served > 0
        try:
            # send_request, not Client.call_tool: call_tool lists the server's tools before the
            # first call of a session to check results against output schemas, a second round trip
            # that buys the model nothing.
            result = await session.client.session.send_request(request, types.CallToolResult)
        except Exception as exc:
            session.release(failed=True)
            if attempt == 0 and reused and _session_terminated(exc):
                continue
            unsupported = any(isinstance(e, MCPError) and e.code == UNSUPPORTED_PROTOCOL_VERSION for e in _leaves(exc))
            if attempt == 0 and unsupported and _negotiated.pop(url, None) is not None:
                continue  # the server no longer speaks the pinned version: negotiate again
            raise await _with_cause(session, exc) from None
        except BaseException:  # cancelled (the call's timeout): the session itself is fine
            session.release()
            raise
        session.served += 1
        session.release()
        return result
    raise AssertionError("unreachable")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _origin(url: str) -> str:
    # Errors name the server, never the full URL: a path or query may carry a key.
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def _failure(exc: Exception, call: _CallState, url: str) -> ToolError:
    if isinstance(call.token_error, ToolError):  # the refresh after a 401 failed
        return call.token_error
    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, ToolError):
            return leaf
    server = f"the MCP server at {_origin(url)}"
    leaf = next((e for e in leaves if isinstance(e, httpx2.HTTPError)), None) or next(
        (e for e in leaves if isinstance(e, MCPError)), leaves[0]
    )
    if isinstance(leaf, MCPError) and call.error_status is not None:
        if call.error_status == 401:
            if call.auth is None:
                return ToolError(f"{server} requires authentication (HTTP 401) and the tool has no auth configured")
            return ToolError(f"{server} refused the access token (HTTP 401), also a newly fetched one")
        return ToolError(f"{server} answered HTTP {call.error_status}")
    if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
        return ToolError(f"could not connect to {server} ({leaf})")
    if isinstance(leaf, httpx2.HTTPError):
        return ToolError(f"{server} could not be reached ({type(leaf).__name__}: {leaf})")
    if isinstance(leaf, MCPError):
        return ToolError(f"{server} answered with an error: {leaf.message} (code {leaf.code})")
    return ToolError(f"{server} failed: {type(leaf).__name__}: {leaf}")


def _content(block: Any) -> Any:
    if isinstance(block, types.TextContent):
        return block.text
    data = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    for heavy in ("data", "blob"):  # base64 images, audio, blobs: the model gets their description, not the bytes
        if isinstance(data.get(heavy), str):
            data[heavy] = f"<{len(data[heavy])} base64 characters omitted>"
    resource = data.get("resource")
    if isinstance(resource, dict) and isinstance(resource.get("blob"), str):
        resource["blob"] = f"<{len(resource['blob'])} base64 characters omitted>"
    return data


def _result(result: types.CallToolResult) -> Any:
    parts = [_content(block) for block in result.content]
    if result.is_error:
        text = " ".join(part for part in parts if isinstance(part, str)).strip()
        raise ToolError(text or "the MCP tool reported an error without a message")
    if result.structured_content is not None:
        return result.structured_content
    if len(parts) == 1:
        return parts[0]
    return parts


async def call_mcp_tool(*, url: str, event: dict[str, Any], timeout: float, auth: Mapping[str, Any] | None = None) -> Any:
    """Call the server tool named `event["function"]` with `event["parameters"]`; its result, or
    ToolError. Connecting, negotiating, fetching a token and the call share one `timeout`."""
    name = str(event.get("function") or "")
    arguments = dict(event.get("parameters") or {})
    meta = {EVENT_META_KEY: {key: value for key, value in event.items() if key != "parameters"}}
    call = _CallState(tool_id=str(event.get("toolId") or ""), auth=auth or None)
    key = (url, cache_key(call.tool_id, auth) if auth else call.tool_id)
    reset = _current.set(call)
    try:
        async with asyncio.timeout(timeout):
            if auth:
                # Fetched here, in the caller's task, so a token endpoint failure is this call's error.
                call.token = await access_token(tool_id=call.tool_id, auth=auth, http=_http())
            result = await _call(key, url, name, arguments, meta, timeout)
    except TimeoutError:
        raise timed_out(timeout) from None
    except ToolError:
        raise
    except Exception as exc:
        raise _failure(exc, call, url) from exc
    finally:
        _current.reset(reset)
    return _result(result)
