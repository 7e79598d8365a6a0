"""The A2A door's JSON-RPC binding (docs/doors.md, "A2A"): a request read into a `Call` (its id,
method and params, or what is wrong with it), params parsed into a2a-sdk's protobuf request types,
`SendMessage`'s params as the door's message, the platform's refusals as A2A errors, and results
as its own JSON-RPC server writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from a2a.server.jsonrpc_models import JSONParseError, JSONRPCError
from a2a.types import Role, SendMessageRequest
from a2a.utils.constants import VERSION_HEADER
from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from django.http import HttpRequest
from google.protobuf.json_format import MessageToDict, ParseDict, ParseError
from google.protobuf.message import Message as ProtoMessage
from rest_framework import exceptions, serializers

from chat.turn.door import DoorError, DoorMessage
from chat.turn.events import TurnEvent
from chatplatform.api import bodies
from chatplatform.api.errors import Code

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
