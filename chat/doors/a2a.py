"""The A2A door (docs/doors.md): each chat app is an A2A 1.0 agent at `/a2a/{chatAppId}`, its
card at `GET /a2a/{chatAppId}/.well-known/agent-card.json`, its JSON-RPC binding at `POST
/a2a/{chatAppId}`: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`,
`SubscribeToTask`.

A task is a turn: its `id` is the answer's (the assistant message's `messageId`), its `contextId`
the session's. The task is told by the turn's events (`TaskEvents`): while it runs, from the
turn's kept events; once it is no longer kept, from the stored answer. Shapes are a2a-sdk's
protobuf types, written as its own JSON-RPC server writes them; its Starlette server is not used,
the admission being the doors' one (chat.turn.door).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import orjson
from a2a.server.jsonrpc_models import JSONParseError, JSONRPCError
from a2a.server.request_handlers.response_helpers import agent_card_to_dict, build_error_response
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    StringList,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, VERSION_HEADER, TransportProtocol
from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from a2a.utils.task import apply_history_length
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage
from rest_framework import exceptions, serializers

from chat.approvals.models import PausedTurn
from chat.doors.http import DoorView, caller_of, rendered_sse, sse_response
from chat.sessions.models import ChatMessage, ChatSession, MessageSource
from chat.turn import replay
from chat.turn.door import DoorError, DoorMessage, admit_door, admit_door_caller, door_error, usable_chat_app
from chat.turn.events import Turn, TurnEvent
from chat.users.models import ChatUser
from chatplatform.api import bodies
from chatplatform.api.errors import Code
from chatplatform.db import on_db_thread

Proto = TypeVar("Proto", bound=ProtoMessage)

TURN_METHODS = {"SendMessage", "SendStreamingMessage"}
UNSUPPORTED_METHODS = {"ListTasks", "GetExtendedAgentCard"}
TASK_METHODS = {"GetTask", "CancelTask", "SubscribeToTask"}
PUSH_METHODS = {
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
}
TEXT = "text/plain"
ANSWER = "answer"  # the artifact holding the answer's text
CANCEL_WAIT_SECONDS = 5.0  # a stopped turn ends within 2 s (docs/api.md, "Resume, stop and approvals")

# Refusals a JSON-RPC client meets at the HTTP layer, before any method: the credentials, the rate
# limit, the body's size, an agent that is not there. Every other refusal is a JSON-RPC error in a
# 200, as a2a-sdk's server answers them, so that its client raises the matching A2A error.
HTTP_REFUSALS = {401, 403, 413, 429}


def rpc_error(error: DoorError) -> tuple[int, A2AError]:
    """A refusal of the platform as (HTTP status, A2A error); the platform's code goes in its data."""
    data = {"code": error.code}
    if error.status in HTTP_REFUSALS or error.code == Code.INVALID_CHAT_APP_ID:
        return error.status, InvalidRequestError(error.message, data)
    if error.status == 400 or error.code == Code.INVALID_SESSION_ID:
        return 200, InvalidParamsError(error.message, data)
    if error.status >= 500:
        return 200, InternalError(error.message, data)
    return 200, InvalidRequestError(error.message, data)


def event_error(event: TurnEvent, headers: dict[str, str] | None = None) -> DoorError:
    """A turn's `error` event as a refusal (a turn that failed before it named its answer)."""
    return DoorError(event.status, event.data.get("code") or Code.INTERNAL_ERROR, event.data.get("error") or "", headers or {})


def result(call_id: str | int | None, value: ProtoMessage | dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call_id, "result": value if isinstance(value, dict) else MessageToDict(value)}


# --- The JSON-RPC request ------------------------------------------------------------------------


@dataclass
class Call:
    """A JSON-RPC request, read: its id, method and params, or what is wrong with it (answered
    once the caller is admitted: credentials come first)."""

    id: str | int | None = None
    method: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    problem: A2AError | JSONRPCError | None = None


def call_of(request: HttpRequest, body: bytes) -> Call:
    try:
        data = bodies.load_json(body)
    except exceptions.ParseError as exc:
        return Call(problem=JSONParseError(message=str(exc.detail)))  # the JSON-RPC error: a2a-sdk's A2AError of it renders as -32603
    if not isinstance(data, dict):
        return Call(problem=InvalidRequestError("the body must be one JSON-RPC request object (batches are not supported)"))
    call_id = data.get("id")
    call = Call(call_id if isinstance(call_id, str | int) and not isinstance(call_id, bool) else None)
    method, params = data.get("method"), data.get("params", {})
    version = request.headers.get(VERSION_HEADER, "")
    if data.get("jsonrpc") != "2.0":
        call.problem = InvalidRequestError('jsonrpc: must be "2.0"')
    elif call.id is None and call_id is not None:
        call.problem = InvalidRequestError("id: must be a string or an integer")
    elif not isinstance(method, str) or not method:
        call.problem = InvalidRequestError("method: must be a non-empty string")
    elif not isinstance(params, dict):
        call.problem = InvalidParamsError("params: must be an object")
    elif version and version.split(".")[0] != "1":
        call.problem = VersionNotSupportedError(f"{VERSION_HEADER}: version {version} is not supported; this agent speaks A2A 1.0")
    elif method in PUSH_METHODS:
        call.problem = PushNotificationNotSupportedError()
    elif method in UNSUPPORTED_METHODS:
        call.problem = UnsupportedOperationError(f"{method} is not supported by this agent")
    elif method not in TURN_METHODS | TASK_METHODS:
        call.problem = MethodNotFoundError(f"method {method} not found")
    else:
        call.method, call.params = method, params
    return call


def parsed(params: dict[str, Any], message: Proto) -> Proto:
    """The params as the method's request type (400 naming the field for a malformed one)."""
    try:
        return ParseDict(params, message, ignore_unknown_fields=True)
    except ParseError as exc:
        raise serializers.ValidationError({"params": str(exc)}) from None


def door_message(chat_app_id: str, params: dict[str, Any]) -> DoorMessage:
    """A `SendMessageRequest`: the user's message, text parts only, and the context it continues."""
    request = parsed(params, SendMessageRequest())
    if not request.HasField("message"):
        raise serializers.ValidationError({"message": "is required"})
    message = request.message
    if message.role != Role.ROLE_USER:
        raise serializers.ValidationError({"message.role": "must be ROLE_USER"})
    if message.task_id:
        raise serializers.ValidationError({"message.taskId": "a task ends with its turn: continue its context with contextId instead"})
    if request.configuration.history_length < 0:
        raise serializers.ValidationError({"configuration.historyLength": "must be 0 or more"})
    texts = []
    for index, part in enumerate(message.parts):
        if part.WhichOneof("content") != "text":
            raise serializers.ValidationError({f"message.parts[{index}]": "only text parts are supported"})
        texts.append(part.text)
    text = "".join(texts)
    if not text.strip():
        raise serializers.ValidationError({"message.parts": "must hold some text"})
    return DoorMessage(chat_app_id, text, message.context_id or None, options={"request": request})


# --- A turn as a task ----------------------------------------------------------------------------


def text_message(message_id: str, role: Role, text: str, task: Task) -> Message:
    return Message(message_id=message_id, role=role, parts=[Part(text=text)], context_id=task.context_id, task_id=task.id)


class TaskEvents:
    """A turn's events as an A2A task: the task first (working, the user's message in its
    history), the answer's text as chunks of the `answer` artifact, then the final status:
    completed, canceled (its user stopped it), input-required (a tool call waits for a person's
    approval, docs/api.md) or failed. `task` is the task as told so far; `update` gives each
    event's StreamResponses as JSON, valid until the next update."""

    def __init__(self, user_text: str, user_message_id: str = "") -> None:
        self.user_text, self.user_message_id = user_text, user_message_id
        self.task = Task(status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))
        self.streamed: list[str] = []
        self._appended: dict[str, Any] | None = None  # an appending chunk's JSON, refilled with each piece of text

    @property
    def finished(self) -> bool:
        return self.task.status.state not in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)

    def update(self, event: TurnEvent) -> list[dict[str, Any]]:
        task = self.task
        if event.type == "session":
            task.id, task.context_id = event.data["messageId"], event.data["sessionId"]
            user_message_id = event.data.get("userMessageId") or self.user_message_id or str(uuid.uuid4())
            task.history.append(text_message(user_message_id, Role.ROLE_USER, self.user_text, task))
            self.status(TaskState.TASK_STATE_WORKING)
            return [MessageToDict(StreamResponse(task=task))]
        if event.type == "delta":
            self.streamed.append(event.data["text"])
            return [self.chunk(event.data["text"], last=False)]
        if event.type == "done":
            return self.done(event.data)
        if event.type == "error" and task.id:
            failure = text_message(str(uuid.uuid4()), Role.ROLE_AGENT, event.data.get("error") or "the turn failed", task)
            failure.metadata.update({"code": event.data.get("code") or Code.INTERNAL_ERROR})
            return [self.status(TaskState.TASK_STATE_FAILED, failure)]
        return []

    def done(self, done: dict[str, Any]) -> list[dict[str, Any]]:
        text = done["response"]
        # The artifact's chunks are its text as streamed; an answer that differs (a verified one) replaces them.
        closing = self.chunk("", last=True) if "".join(self.streamed) == text else self.chunk(text, last=True, replace=True)
        self.task.history.append(text_message(done.get("messageId") or self.task.id, Role.ROLE_AGENT, text, self.task))
        if done.get("stopped"):
            return [closing, self.status(TaskState.TASK_STATE_CANCELED)]
        if done.get("status") == "awaiting_approval":
            waiting = text_message(str(uuid.uuid4()), Role.ROLE_AGENT, "a tool call waits for a person's approval", self.task)
            return [closing, self.status(TaskState.TASK_STATE_INPUT_REQUIRED, waiting)]
        return [closing, self.status(TaskState.TASK_STATE_COMPLETED)]

    def chunk(self, text: str, *, last: bool, replace: bool = False) -> dict[str, Any]:
        """A piece of the answer: the first creates the artifact (or replaces it), the next ones append to it."""
        append = bool(self.task.artifacts) and not replace
        if append:  # the task's own artifact holds the text so far in one part, for a client that reads the first
            self.task.artifacts[0].parts[0].text += text
        else:
            del self.task.artifacts[:]
            self.task.artifacts.add(artifact_id=ANSWER, name=ANSWER).parts.add(text=text)
        if append and not last:
            # Each token's chunk: the SDK's JSON of one, refilled (protobuf's MessageToDict per token
            # would double the door's CPU per turn; docs/decisions.md).
            if self._appended is None:
                self._appended = self.chunk_json("", append=True, last=False)
            self._appended["artifactUpdate"]["artifact"]["parts"][0]["text"] = text
            return self._appended
        return self.chunk_json(text, append=append, last=last)

    def chunk_json(self, text: str, *, append: bool, last: bool) -> dict[str, Any]:
        artifact = Artifact(artifact_id=ANSWER, name=ANSWER, parts=[Part(text=text)])
        task_id, context_id = self.task.id, self.task.context_id
        update = TaskArtifactUpdateEvent(task_id=task_id, context_id=context_id, artifact=artifact, append=append, last_chunk=last)
        return MessageToDict(StreamResponse(artifact_update=update))

    def status(self, state: TaskState, message: Message | None = None) -> dict[str, Any]:
        status = TaskStatus(state=state, message=message)
        status.timestamp.GetCurrentTime()
        self.task.status.CopyFrom(status)
        update = TaskStatusUpdateEvent(task_id=self.task.id, context_id=self.task.context_id, status=status)
        return MessageToDict(StreamResponse(status_update=update))


def told(turn: Turn, events: TaskEvents) -> TaskEvents:
    for event in turn.events:
        events.update(event)
    return events


# --- Finding a task --------------------------------------------------------------------------------


@dataclass
class FoundTask:
    session_id: uuid.UUID
    turn: Turn  # kept (running, or recently ended), or made from the stored answer
    user_text: str
    user_message_id: str

    def events(self) -> TaskEvents:
        return told(self.turn, TaskEvents(self.user_text, self.user_message_id))


async def task_of(task_id: str, user: ChatUser, chat_app_id: str) -> FoundTask | None:
    """The user's task `task_id` of this chat app; None for anything else, another user's alike."""
    try:
        uuid.UUID(task_id)
    except ValueError:
        return None
    kept = await replay.turn_of(task_id)
    session = next((event.data for event in kept.events if event.type == "session"), None) if kept is not None else None
    found = await on_db_thread(_task_rows)(task_id, user.pk, chat_app_id, session)
    if found is None:
        return None
    session_id, user_message, answer, paused = found
    if kept is None:
        if answer is None:
            return None
        kept = stored_turn(answer, user_message, paused)
    return FoundTask(session_id, kept, user_message.message if user_message else "", str(user_message.pk) if user_message else "")


def _task_rows(
    task_id: str, user_id: str, chat_app_id: str, session: dict[str, Any] | None
) -> tuple[uuid.UUID, ChatMessage | None, ChatMessage | None, bool] | None:
    """The task's session, the user's message that began it, its stored answer and whether its
    turn waits for approvals; None when the task is not the user's in this chat app."""
    answer = (
        ChatMessage.objects.filter(pk=task_id, source=MessageSource.ASSISTANT, session__user_id=user_id, session__chat_app_id=chat_app_id)
        .select_related("session")
        .first()
    )
    if answer is not None:
        session_id = answer.session_id
    elif session is not None and ChatSession.objects.filter(pk=session["sessionId"], user_id=user_id, chat_app_id=chat_app_id).exists():
        session_id = uuid.UUID(session["sessionId"])
    else:
        return None
    messages = ChatMessage.objects.filter(session_id=session_id, source=MessageSource.USER)
    if session is not None and session.get("userMessageId"):
        user_message = messages.filter(pk=session["userMessageId"]).first()
    else:
        user_message = messages.filter(timestamp__lte=answer.timestamp).order_by("-timestamp").first() if answer else None
    paused = answer is not None and PausedTurn.objects.filter(pk=answer.pk).exists()
    return session_id, user_message, answer, paused


def stored_turn(answer: ChatMessage, user_message: ChatMessage | None, paused: bool) -> Turn:
    """A turn no longer kept, as the events its stored answer tells."""
    turn = Turn()
    session = {"sessionId": str(answer.session_id), "messageId": str(answer.pk)}
    if user_message is not None:
        session["userMessageId"] = str(user_message.pk)
    turn.emit(TurnEvent("session", session))
    turn.emit(TurnEvent("delta", {"text": answer.message}))
    if answer.error:
        turn.emit(TurnEvent("error", {"error": answer.error.get("message", ""), "code": answer.error.get("code")}, 500))
    else:
        done = {"response": answer.message, "stopped": bool(answer.stop_reason), "status": "awaiting_approval" if paused else ""}
        turn.emit(TurnEvent("done", done))
    turn.emit(None)
    return turn


# --- The views -------------------------------------------------------------------------------------


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
