"""The MCP door (docs/doors.md): `/mcp`, an MCP server over Streamable HTTP, served by the official
`mcp` SDK's low-level server. Each chat app the caller may use is one tool, `ask_<chatAppId>`;
calling it runs a turn of the chat app's agent, admitted by the doors' one admission
(chat.turn.door).

Every request to /mcp is admitted once, in the view, before the SDK reads it: a `tools/call` of
an `ask_` tool by the turn's admission, anything else by the caller's. Who calls and how often
(401, 429) is answered in HTTP, as for every door; what is wrong with the call itself (its
arguments, its session) comes back as the tool's error (`isError`), which an MCP host shows to
its model. The SDK then runs statelessly: each request stands alone, so any process of the
platform serves any request.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import AsyncIterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from rest_framework import exceptions, serializers

from chat.chat_apps.models import ChatApp
from chat.chat_apps.selectors import chat_apps_for_user
from chat.doors.http import DoorView, caller_of
from chat.turn.door import DoorError, DoorMessage, DoorTurn, admit_door, admit_door_caller, door_error, unknown_chat_app
from chat.users.models import ChatUser
from chatplatform.api.errors import ApiError, Code
from chatplatform.api.fields import StrictCharField
from chatplatform.db import on_db_thread

logger = logging.getLogger(__name__)

TOOL_PREFIX = "ask_"
SCOPE_KEY = "chat.mcp"  # the ASGI scope's key for what the view admitted, read by the tool handlers

# Refusals of the caller rather than of the call: answered in HTTP, before the SDK reads the request.
CALLER_REFUSALS = {401, 429, 503}

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask: the user's message of the turn."},
        "sessionId": {"type": "string", "description": "Continue this session (its sessionId from an earlier answer)."},
    },
    "required": ["message"],
}
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "sessionId": {"type": "string"},
        "messageId": {"type": "string"},
        "citations": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["sessionId", "messageId", "citations"],
}


def tool_name(chat_app_id: str) -> str:
    return TOOL_PREFIX + chat_app_id.replace("-", "_")


def tools_of(apps: list[ChatApp]) -> dict[str, ChatApp]:
    """The tools of these chat apps by name. Two ids that differ only by `-` and `_` name one tool:
    the first by chatAppId keeps it (docs/doors.md)."""
    tools: dict[str, ChatApp] = {}
    for app in apps:
        tools.setdefault(tool_name(app.pk), app)
    return tools


@dataclass(frozen=True)
class Admitted:
    """What the view admitted, for the tool handlers: the caller, and for a tool call its turn or
    why the call is refused."""

    user: ChatUser | None
    door: DoorTurn | None = None
    refused: DoorError | None = None


# --- The MCP server ------------------------------------------------------------------------------


def admitted_of(ctx: ServerRequestContext[Any, Any]) -> Admitted:
    admitted = ctx.request.scope.get(SCOPE_KEY) if ctx.request is not None else None
    if not isinstance(admitted, Admitted):  # only the view calls the SDK, always with it
        raise MCPError(types.INTERNAL_ERROR, "the request was not admitted")
    return admitted


async def list_tools(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    user = admitted_of(ctx).user
    apps = await on_db_thread(chat_apps_for_user)(user=user)
    tools = [
        types.Tool(
            name=name,
            title=app.title,
            description=app.description or f"Ask {app.title}.",
            input_schema=INPUT_SCHEMA,
            output_schema=OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        )
        for name, app in tools_of(apps).items()
    ]
    # Each caller has their own list, and chat apps change: never shared, never fresh for long.
    return types.ListToolsResult(tools=tools, ttl_ms=0, cache_scope="private")


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    admitted = admitted_of(ctx)
    if admitted.refused is not None:
        if admitted.refused.code == Code.INVALID_CHAT_APP_ID:
            # Not a tool of this caller: the protocol's error for an unknown tool, whatever the reason.
            raise unknown_tool(params.name)
        return tool_error(admitted.refused)
    if admitted.door is None:  # not an `ask_` tool: the view admitted no turn
        raise unknown_tool(params.name)
    return await answered(ctx, admitted.door)


async def answered(ctx: ServerRequestContext[Any, Any], door: DoorTurn) -> types.CallToolResult:
    """The turn's answer; its text as it comes as progress notifications when the client asked for
    them (a `progressToken`): `message` is the new text, `progress` the characters so far. The
    first text goes at once, then at most every PROGRESS_SECONDS, and the rest before the answer."""
    reader = door.events()
    progress = Progress(ctx)
    try:
        while (events := await reader.batch(PROGRESS_SECONDS)) is not None:
            for event in events:
                if event.type == "delta":
                    progress.text += event.data["text"]
                elif event.type == "done":
                    await progress.report(rest=True)  # the notifications' texts add up to the answer
                    done = event.data
                    structured = {"sessionId": done["sessionId"], "messageId": done["messageId"], "citations": done.get("citations") or []}
                    return types.CallToolResult(content=[types.TextContent(text=done["response"])], structured_content=structured)
                elif event.type == "error":
                    return tool_error(DoorError(event.status, event.data.get("code") or Code.INTERNAL_ERROR, event.data.get("error") or ""))
            await progress.report()
    finally:
        reader.close()  # leaving early (the client went away) does not stop the turn
    return tool_error(DoorError(500, Code.INTERNAL_ERROR, "the turn ended without an answer"))


# Each notification costs about 0.5 ms of CPU in the SDK; one per token doubled a call's CPU
# (docs/decisions.md, "The MCP door"). A tenth of a second is still text as it comes to a reader.
PROGRESS_SECONDS = 0.1


class Progress:
    """The text not yet reported, and when the last report went."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self.ctx = ctx
        self.text = ""
        self.reported = 0
        self.at = -PROGRESS_SECONDS

    async def report(self, *, rest: bool = False) -> None:
        now = asyncio.get_running_loop().time()
        if not self.text or (now - self.at < PROGRESS_SECONDS and not rest):
            return
        self.reported += len(self.text)
        text, self.text, self.at = self.text, "", now
        await self.ctx.session.report_progress(self.reported, message=text)


def unknown_tool(name: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")


def tool_error(error: DoorError) -> types.CallToolResult:
    """A refused or failed turn as the tool's error, naming why (docs/api.md, "Envelope")."""
    return types.CallToolResult(content=[types.TextContent(text=f"{error.message} ({error.code})")], is_error=True)


def input_schema(name: str) -> dict[str, Any] | None:
    """A tool's input schema without listing the caller's tools (the SDK checks a 2026-07-28
    call's `Mcp-Param-*` headers against it): every `ask_` tool has the same."""
    return INPUT_SCHEMA if name.startswith(TOOL_PREFIX) else None


SERVER = Server("chat-platform", on_list_tools=list_tools, on_call_tool=call_tool, get_tool_input_schema=input_schema)


class Manager:
    """The SDK's session manager, running for as long as the event loop that started it. It serves
    requests in a task group of its own, entered here at the first request: the platform's ASGI
    application has no lifespan to enter it in (Django's handler serves HTTP only)."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.sessions = StreamableHTTPSessionManager(app=SERVER, stateless=True)
        self.ready = asyncio.Event()
        # A context of its own: not the first request's, whose values would outlive it here.
        self.task = self.loop.create_task(self.run(), context=contextvars.Context())

    async def run(self) -> None:
        async with self.sessions.run():
            self.ready.set()
            await asyncio.Event().wait()


_manager: Manager | None = None


async def sessions() -> StreamableHTTPSessionManager:
    global _manager
    if _manager is None or _manager.loop is not asyncio.get_running_loop():
        _manager = Manager()
    await _manager.ready.wait()
    return _manager.sessions


# --- The view ------------------------------------------------------------------------------------


class AskArguments(serializers.Serializer):
    """An `ask_` tool's arguments; the message's rules are converse's (the admission checks them)."""

    message = StrictCharField(trim_whitespace=False)
    sessionId = StrictCharField(required=False, allow_null=True, allow_blank=True)


def tool_call(body: bytes) -> tuple[Any, dict[str, Any]] | None:
    """The JSON-RPC request id and params of a `tools/call` of an `ask_` tool; None for any other
    message, or a body the SDK will refuse (it says why)."""
    try:
        message = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call" or "id" not in message:
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("name"), str) or not params["name"].startswith(TOOL_PREFIX):
        return None
    return message["id"], params


def read_call(params: dict[str, Any], user: ChatUser) -> DoorMessage:
    """The call's chat app (a tool of this caller's, or 404 as an unknown one) and its arguments."""
    app = tools_of(chat_apps_for_user(user=user)).get(params["name"])
    if app is None:
        raise unknown_chat_app(params["name"].removeprefix(TOOL_PREFIX))
    arguments = params.get("arguments")
    if not isinstance(arguments, dict):
        raise serializers.ValidationError({"arguments": "must be an object with a message"})
    checker = AskArguments(data=arguments)
    checker.is_valid(raise_exception=True)
    return DoorMessage(app.pk, checker.validated_data["message"], checker.validated_data.get("sessionId") or None)


# Hop-by-hop and length headers are the ASGI server's to write, not the SDK's answer's.
UNFORWARDED = {"connection", "content-length", "transfer-encoding", "keep-alive"}


class McpView(DoorView):
    """`/mcp`: POST a JSON-RPC message, GET the server's stream, as Streamable HTTP has them (a
    stateless server has no session to DELETE)."""

    http_method_names = ["get", "post", "options"]

    async def post(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        try:
            call = tool_call(self.body(request))
        except ApiError:
            call = None  # too large: refused once the caller is admitted, as any body is
        if call is None:
            return await self.as_caller(request)
        request_id, params = call
        try:
            door = await admit_door(caller_of(request), lambda user: read_call(params, user))
        except DoorError as error:
            if error.status in CALLER_REFUSALS:
                return self.failed(error, request_id)
            return await self.serve(request, Admitted(None, refused=error), error.headers)
        try:
            return await self.serve(request, Admitted(door.admitted.context.user, door=door), door.headers)
        finally:
            door.events()  # started whatever the SDK made of the request: the admission stored its message

    async def get(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        return await self.as_caller(request)

    async def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:  # type: ignore[override]
        return self.failed(door_error(exceptions.MethodNotAllowed(request.method or "")), None)

    async def as_caller(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        """Any request but a turn's, admitted as the caller's (counted as a Chat API request)."""
        try:
            caller = await admit_door_caller(caller_of(request))
        except DoorError as error:
            return self.failed(error, None)
        return await self.serve(request, Admitted(caller.user), caller.headers)

    def failed(self, error: DoorError, request_id: Any) -> HttpResponse:
        """A refusal as a JSON-RPC error (the SDK's clients read its message), with its HTTP status
        and headers; the platform's code in `data`."""
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {"code": types.INVALID_REQUEST, "message": error.message, "data": {"code": error.code}},
        }
        response = HttpResponse(orjson.dumps(body), status=error.status, content_type="application/json")
        for name, value in error.headers.items():
            response[name] = value
        response["Allow"] = self.allowed()
        return response

    async def serve(self, request: HttpRequest, admitted: Admitted, headers: dict[str, str]) -> HttpResponse | StreamingHttpResponse:
        """The SDK's answer to the request, with what was admitted in its scope: an answer in one
        piece, or Server-Sent Events as they come."""
        try:
            exchange = Exchange(self.body(request))
        except ApiError as exc:
            return self.failed(door_error(exc), None)
        manager = await sessions()
        scope = {**request.scope, SCOPE_KEY: admitted}  # type: ignore[attr-defined]  # an ASGIRequest's
        exchange.task = asyncio.create_task(manager.handle_request(scope, exchange.receive, exchange.send))
        exchange.task.add_done_callback(exchange.ended)
        start = await exchange.next()
        if start is None:
            return self.failed(DoorError(500, Code.INTERNAL_ERROR, "the MCP server failed"), None)
        answer = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in start["headers"]}
        if answer.get("content-type", "").startswith("text/event-stream"):
            response: HttpResponse | StreamingHttpResponse = StreamingHttpResponse(exchange.body(), status=start["status"])
        else:
            response = HttpResponse(b"".join([chunk async for chunk in exchange.body()]), status=start["status"])
        for name, value in {**answer, **headers}.items():
            if name.lower() not in UNFORWARDED:
                response[name] = value
        return response


class Exchange:
    """One request handed to the SDK's ASGI application, and its answer's messages as they come."""

    def __init__(self, body: bytes) -> None:
        self.request: bytes | None = body
        self.messages: asyncio.Queue[MutableMapping[str, Any] | None] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def receive(self) -> dict[str, Any]:
        if self.request is not None:
            body, self.request = self.request, None
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # read already: Django notices the client leaving and cancels the answer
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        await self.messages.put(message)

    def ended(self, task: asyncio.Task[None]) -> None:
        self.messages.put_nowait(None)
        if not task.cancelled() and task.exception() is not None:
            logger.error("the MCP server failed", exc_info=task.exception())

    async def next(self) -> MutableMapping[str, Any] | None:
        return await self.messages.get()

    async def body(self) -> AsyncIterator[bytes]:
        finished = False
        try:
            while (message := await self.next()) is not None:
                if message.get("body"):
                    yield message["body"]
                if not message.get("more_body"):
                    finished = True
                    return
        finally:
            if not finished and self.task is not None:
                self.task.cancel()  # the client went away: the tool's reader closes, its turn runs on
