"""The A2A door (docs/doors.md): each chat app is an A2A 1.0 agent at `/a2a/{chatAppId}`, its
card at `GET /a2a/{chatAppId}/.well-known/agent-card.json`, its JSON-RPC binding at `POST
/a2a/{chatAppId}`: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`,
`SubscribeToTask`.

A task is a turn: its `id` is the answer's (the assistant message's `messageId`), its `contextId`
the session's. The task is told by the turn's events (`TaskEvents`, chat.doors.a2a_tasks): while
it runs, from the turn's kept events; once it is no longer kept, from the stored answer. Shapes are
a2a-sdk's protobuf types, written as its own JSON-RPC server writes them (chat.doors.a2a_rpc); its
Starlette server is not used, the admission being the doors' one (chat.turn.door). This module is
the door's views and its agent card.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson
from a2a.server.jsonrpc_models import JSONRPCError
from a2a.server.request_handlers.response_helpers import agent_card_to_dict, build_error_response
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    GetTaskRequest,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    StringList,
    SubscribeToTaskRequest,
    Task,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol
from a2a.utils.errors import A2AError, TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError
from a2a.utils.task import apply_history_length
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from rest_framework import serializers

from chat.doors.a2a_rpc import TURN_METHODS, Call, call_of, door_message, event_error, parsed, result, rpc_error
from chat.doors.a2a_tasks import TaskEvents, task_of
from chat.doors.http import DoorView, caller_of, rendered_sse, sse_response
from chat.turn import replay
from chat.turn.door import DoorError, admit_door, admit_door_caller, door_error, usable_chat_app
from chat.turn.events import TurnEvent
from chat.users.models import ChatUser
from chatplatform.db import on_db_thread

TEXT = "text/plain"
CANCEL_WAIT_SECONDS = 5.0  # a stopped turn ends within 2 s (docs/api.md, "Resume, stop and approvals")


class A2ADoorView(DoorView):
    """The A2A door's answers: JSON with the given headers; refusals as JSON-RPC errors."""

    def rpc(self, data: dict[str, Any], headers: dict[str, str], status: int = 200) -> HttpResponse:
        response = HttpResponse(orjson.dumps(data), status=status, content_type="application/json")
        for name, value in headers.items():
            response[name] = value
        response["Allow"] = self.allowed()
        return response

    def refused(self, call: Call, error: DoorError) -> HttpResponse:
        status, problem = rpc_error(error)
        return self.rpc(build_error_response(call.id, problem), error.headers, status)


class A2AView(A2ADoorView):
    """`POST /a2a/{chatAppId}`: the agent's JSON-RPC methods."""

    def failed(self, call: Call, problem: A2AError | JSONRPCError, headers: dict[str, str]) -> HttpResponse:
        return self.rpc(build_error_response(call.id, problem), headers)

    async def post(self, request: HttpRequest, chatAppId: str) -> HttpResponse | StreamingHttpResponse:
        try:
            call = call_of(request, self.body(request))
        except Exception as exc:  # too large: 413, once the caller is known
            return self.refused(Call(), door_error(exc))
        if call.method in TURN_METHODS:
            return await self.send(request, chatAppId, call)
        try:
            caller = await admit_door_caller(caller_of(request))
            await on_db_thread(usable_chat_app)(chatAppId, caller.user)
        except DoorError as error:
            return self.refused(call, error)
        except Exception as exc:
            return self.refused(call, door_error(exc))
        if call.problem is not None:
            return self.failed(call, call.problem, caller.headers)
        try:
            if call.method == "SubscribeToTask":
                return await self.subscribe(call, caller.user, chatAppId, caller.headers)
            if call.method == "GetTask":
                task = await self.get_task(call, caller.user, chatAppId)
            else:
                task = await self.cancel_task(call, caller.user, chatAppId)
        except A2AError as problem:
            return self.failed(call, problem, caller.headers)
        except serializers.ValidationError as exc:
            return self.refused(call, replace(door_error(exc), headers=caller.headers))
        return self.rpc(result(call.id, task), caller.headers)

    async def send(self, request: HttpRequest, chat_app_id: str, call: Call) -> HttpResponse | StreamingHttpResponse:
        """`SendMessage` / `SendStreamingMessage`: a turn; its task when it ends (or at once with
        `returnImmediately`), or its events as they come."""
        try:
            door = await admit_door(caller_of(request), lambda user: door_message(chat_app_id, call.params))
        except DoorError as error:
            return self.refused(call, error)
        send: SendMessageRequest = door.request.options["request"]
        events = TaskEvents(door.request.message)
        if call.method == "SendStreamingMessage":
            return self.streamed(rendered_sse(door.events(), lambda event: self.stream_chunk(call, events, event)), door.headers)
        reader = door.events()
        try:
            async for event in reader:
                events.update(event)
                if event.type == "error" and not events.task.id:
                    return self.refused(call, event_error(event, door.headers))
                if events.finished or (events.task.id and send.configuration.return_immediately):
                    break
        finally:
            reader.close()
        task = apply_history_length(events.task, send.configuration)
        return self.rpc(result(call.id, SendMessageResponse(task=task)), door.headers)

    def stream_chunk(self, call: Call, events: TaskEvents, event: TurnEvent) -> tuple[bytes, bool]:
        if event.type == "error" and not events.task.id:
            _, problem = rpc_error(event_error(event))
            return b"event: error\ndata: " + orjson.dumps(build_error_response(call.id, problem)) + b"\n\n", True
        chunks = [b"data: " + orjson.dumps(result(call.id, update)) + b"\n\n" for update in events.update(event)]
        return b"".join(chunks), events.finished

    async def subscribe(self, call: Call, user: ChatUser, chat_app_id: str, headers: dict[str, str]) -> StreamingHttpResponse:
        """`SubscribeToTask`: a running task as it stands, then its events as they come (from any
        process: the turn's kept events, docs/api.md "Resume, stop and approvals")."""
        request = parsed(call.params, SubscribeToTaskRequest())
        found = await task_of(request.id, user, chat_app_id)
        if found is None:
            raise TaskNotFoundError(f"task {request.id} not found")
        events = found.events()
        if events.finished:
            raise UnsupportedOperationError(f"task {request.id} has ended: get it with GetTask")
        reader = found.turn.reader(found.turn.last)  # what comes after the task as it stands

        async def chunks() -> AsyncIterator[bytes]:
            yield b"data: " + orjson.dumps(result(call.id, StreamResponse(task=events.task))) + b"\n\n"
            async for chunk in rendered_sse(reader, lambda event: self.stream_chunk(call, events, event)):
                yield chunk

        return self.streamed(chunks(), headers)

    def streamed(self, chunks: AsyncIterator[bytes], headers: dict[str, str]) -> StreamingHttpResponse:
        response = sse_response(chunks)
        for name, value in headers.items():
            response[name] = value
        return response

    async def get_task(self, call: Call, user: ChatUser, chat_app_id: str) -> Task:
        request = parsed(call.params, GetTaskRequest())
        if request.HasField("history_length") and request.history_length < 0:
            raise serializers.ValidationError({"historyLength": "must be 0 or more"})
        found = await task_of(request.id, user, chat_app_id)
        if found is None:
            raise TaskNotFoundError(f"task {request.id} not found")
        return apply_history_length(found.events().task, request)

    async def cancel_task(self, call: Call, user: ChatUser, chat_app_id: str) -> Task:
        """Stop the task's turn (docs/api.md, "Resume, stop and approvals") and answer the task
        once its turn has stored what it had: canceled, with the text so far."""
        request = parsed(call.params, CancelTaskRequest())
        found = await task_of(request.id, user, chat_app_id)
        if found is None:
            raise TaskNotFoundError(f"task {request.id} not found")
        events = found.events()
        reader = found.turn.reader(found.turn.last)  # what comes after the events told
        try:
            if events.finished or not await replay.stop(found.session_id):
                raise TaskNotCancelableError(f"task {request.id} has ended: it cannot be canceled")
            async with asyncio.timeout(CANCEL_WAIT_SECONDS):
                async for event in reader:
                    events.update(event)
                    if events.finished:
                        break
        except TimeoutError:
            pass  # answered as it stands: the turn still ends and stores its answer
        finally:
            reader.close()
        return events.task


class AgentCardView(A2ADoorView):
    """`GET /a2a/{chatAppId}/.well-known/agent-card.json`: the chat app as an A2A agent, for a
    caller who may use it."""

    async def get(self, request: HttpRequest, chatAppId: str) -> HttpResponse:
        try:
            caller = await admit_door_caller(caller_of(request))
            app = await on_db_thread(usable_chat_app)(chatAppId, caller.user)
        except Exception as exc:
            error = door_error(exc)
            return self.rpc(build_error_response(None, rpc_error(error)[1]), error.headers, error.status)  # not JSON-RPC: its status tells
        return self.rpc(agent_card(app, request.build_absolute_uri(f"/a2a/{app.pk}")), caller.headers)


def agent_card(app: Any, url: str) -> dict[str, Any]:
    """The card: the chat app's name and description, one skill, text in and out, streaming, the bearer scheme."""
    description = app.description or app.title
    card = AgentCard(
        name=app.title,
        description=description,
        supported_interfaces=[AgentInterface(url=url, protocol_binding=TransportProtocol.JSONRPC, protocol_version=PROTOCOL_VERSION_1_0)],
        version=str(app.agent.version),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer", bearer_format="JWT", description="the platform's token (python manage.py issue_token USER_ID)"
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
        default_input_modes=[TEXT],
        default_output_modes=[TEXT],
        skills=[AgentSkill(id=app.pk, name=app.title, description=description, tags=["chat"], input_modes=[TEXT], output_modes=[TEXT])],
    )
    return agent_card_to_dict(card)
