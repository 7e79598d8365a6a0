"""OpenAI's Chat Completions door (docs/doors.md): `POST /v1/chat/completions` and `GET
/v1/models`, in OpenAI's shapes, so that the official SDKs work with `base_url` and a bearer token
as the API key. `model` names a chat app; the turn is the converse turn of its agent, admitted by
the doors' one admission (chat.turn.door).

What the Responses door (chat.doors.responses) shares is here too: the error object, the view
base, and the text of a message's content.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers

from chat.chat_apps.selectors import chat_apps_for_user
from chat.doors.http import DoorView, caller_of, rendered_sse, sse_response
from chat.turn.admission import parse, validate
from chat.turn.door import DoorError, DoorMessage, DoorTurn, admit_door, admit_door_caller, door_error, unknown_chat_app
from chat.turn.events import TurnEvent
from chatplatform.api.errors import Code
from chatplatform.api.fields import StrictCharField
from chatplatform.db import on_db_thread

SESSION_HEADER = "X-Chat-Session-Id"

# OpenAI's error `type` for each status (its SDKs choose their exception class by the status).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def error_object(error: DoorError) -> dict[str, Any]:
    """`{"error": {message, type, code, param}}`; `code` is the platform's (docs/api.md, "Envelope")."""
    kind = ERROR_TYPES.get(error.status, "server_error" if error.status >= 500 else "invalid_request_error")
    return {"error": {"message": error.message, "type": kind, "code": error.code, "param": None}}


def error_event_object(event: TurnEvent) -> dict[str, Any]:
    """A turn's `error` event as OpenAI's error object."""
    return error_object(DoorError(event.status, event.data.get("code") or Code.INTERNAL_ERROR, event.data.get("error") or ""))


def sse_data(data: Any) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\n\n"


class OpenAIDoorView(DoorView):
    """The OpenAI doors' answers: JSON with the given headers, errors in OpenAI's shape."""

    def json(self, data: Any, headers: dict[str, str], status: int = 200) -> HttpResponse:
        response = HttpResponse(orjson.dumps(data), status=status, content_type="application/json")
        for name, value in headers.items():
            response[name] = value
        response["Allow"] = self.allowed()
        return response

    def failed(self, error: DoorError) -> HttpResponse:
        return self.json(error_object(error), error.headers, error.status)

    def events(self, chunks: Any, headers: dict[str, str]) -> StreamingHttpResponse:
        response = sse_response(chunks)
        for name, value in headers.items():
            response[name] = value
        return response

    def read_body(self, request: HttpRequest, serializer: type[serializers.Serializer]) -> dict[str, Any]:
        """The JSON body checked by `serializer` (400, 413, 415 naming the field and the rule)."""
        return validate(parse(self.body(request), request.content_type or ""), serializer)

    # An async view's handlers are coroutines, which Django awaits; the stubs type View's as sync.
    async def http_method_not_allowed(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:  # type: ignore[override]
        return self.failed(door_error(exceptions.MethodNotAllowed(request.method or "")))


@method_decorator(csrf_exempt, name="dispatch")  # its own dispatch: DoorView's exemption is on the one it replaces
class UnknownPathView(OpenAIDoorView):
    """Any other path under /v1/: 404 in OpenAI's shape, as an OpenAI client expects it."""

    async def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:  # type: ignore[override]
        return self.failed(DoorError(404, Code.NOT_FOUND, f"no such path: {request.path}"))


# --- Message content -----------------------------------------------------------------------------

TEXT_PARTS = {"text", "input_text", "output_text"}


def content_text(content: Any, field: str) -> str:
    """The text of a message's `content`: a string, or parts whose text parts are joined (400 for
    any other part: only text goes through these doors)."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise serializers.ValidationError({field: "must be a string or a list of content parts"})
    texts = []
    for index, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in TEXT_PARTS or not isinstance(part.get("text"), str):
            raise serializers.ValidationError({f"{field}[{index}]": "only text parts are supported (type text with a string text)"})
        texts.append(part["text"])
    return "".join(texts)


def turn_and_history(messages: list[tuple[str, str]], field: str) -> tuple[str, list[tuple[str, str]]]:
    """The last `user` message (the turn's), and the `user` and `assistant` messages before it (a
    new session's history); system and developer messages are left to the agent's prompt."""
    last = max((index for index, (role, _) in enumerate(messages) if role == "user"), default=None)
    if last is None:
        raise serializers.ValidationError({field: "must hold a user message"})
    if not messages[last][1].strip():
        raise serializers.ValidationError({f"{field}[{last}]": "the last user message must not be blank"})
    history = [(role, text) for role, text in messages[:last] if role in ("user", "assistant")]
    return messages[last][1], history


def no_tools(value: Any) -> Any:
    if value:
        raise serializers.ValidationError("client-side tools are not supported by this door; the AG-UI door takes them (docs/doors.md)")
    return value


def usage_of(done: dict[str, Any]) -> tuple[int, int]:
    usage = done.get("usage") or {}
    return int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)


# --- /v1/models ----------------------------------------------------------------------------------


def model_of(app: Any) -> dict[str, Any]:
    return {"id": app.pk, "object": "model", "created": int(app.create_date.timestamp()), "owned_by": "chat-platform"}


class ModelsView(OpenAIDoorView):
    """`GET /v1/models`: the chat apps the caller may use, as models; `GET /v1/models/{id}`: one of them."""

    async def get(self, request: HttpRequest, modelId: str | None = None) -> HttpResponse:
        try:
            caller = await admit_door_caller(caller_of(request))
        except DoorError as error:
            return self.failed(error)
        apps = await on_db_thread(chat_apps_for_user)(user=caller.user, chat_app_id=modelId)
        if modelId is None:
            return self.json({"object": "list", "data": [model_of(app) for app in apps]}, caller.headers)
        if not apps:
            return self.failed(door_error(unknown_chat_app(modelId)).with_headers(caller.headers))
        return self.json(model_of(apps[0]), caller.headers)


# --- /v1/chat/completions ------------------------------------------------------------------------


class ChatMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "developer", "user", "assistant", "tool", "function"])
    content = serializers.JSONField(required=False, allow_null=True)


class ChatCompletionRequestSerializer(serializers.Serializer):
    """The fields this door reads; OpenAI's others (temperature, max_tokens…) are ignored: the agent decides."""

    model = StrictCharField(max_length=128)
    # many=True hands max_length to the ListSerializer (DRF 3.15), which the stubs do not know.
    messages = ChatMessageSerializer(many=True, allow_empty=False, max_length=1000)  # type: ignore[call-arg]
    stream = serializers.BooleanField(required=False, default=False)
    stream_options = serializers.DictField(required=False, allow_null=True)
    metadata = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False, allow_null=True)
    tools = serializers.ListField(required=False, allow_null=True, validators=[no_tools])
    n = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=1)  # a turn has one answer

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        texts = [(m["role"], content_text(m.get("content"), f"messages[{i}].content")) for i, m in enumerate(data["messages"])]
        data["message"], data["history"] = turn_and_history(texts, "messages")
        return data


class ChatCompletionsView(OpenAIDoorView):
    """`POST /v1/chat/completions`: a `chat.completion`, or `chat.completion.chunk` events."""

    async def post(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        def read(user: Any) -> DoorMessage:
            body = self.read_body(request, ChatCompletionRequestSerializer)
            session_id = request.headers.get(SESSION_HEADER) or (body.get("metadata") or {}).get("sessionId") or None
            return DoorMessage(body["model"], body["message"], session_id, body["history"], options=body)

        try:
            door = await admit_door(caller_of(request), read)
        except DoorError as error:
            return self.failed(error)
        body, headers = door.request.options, {**door.headers, SESSION_HEADER: door.session_id}
        if body["stream"]:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return self.events(rendered_sse(door.events(), CompletionChunks(body["model"], include_usage).render), headers)
        return await self.completion(door, body["model"], headers)

    async def completion(self, door: DoorTurn, model: str, headers: dict[str, str]) -> HttpResponse:
        try:
            done = await door.answer()
        except DoorError as error:
            return self.failed(error.with_headers(headers))
        prompt, completion = usage_of(done)
        return self.json(
            {
                "id": done["messageId"],
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": done["response"], "refusal": None},
                        "logprobs": None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
            },
            headers,
        )


class CompletionChunks:
    """A turn's events as `chat.completion.chunk` events: the role first, each delta's text, the
    finish, the usage chunk when asked for, `[DONE]`; an error as OpenAI's error object."""

    def __init__(self, model: str, include_usage: bool) -> None:
        self.model, self.include_usage = model, include_usage
        self.created = int(time.time())
        self.id = ""

    def chunk(self, delta: dict[str, Any] | None, finish_reason: str | None = None, **fields: Any) -> bytes:
        choices = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}] if delta is not None else []
        head = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model}
        return sse_data({**head, "choices": choices, **fields})

    def render(self, event: TurnEvent) -> tuple[bytes, bool]:
        if event.type == "session":
            self.id = event.data["messageId"]
            return self.chunk({"role": "assistant", "content": ""}), False
        if event.type == "delta":
            return self.chunk({"content": event.data["text"]}), False
        if event.type == "done":
            chunks = [self.chunk({}, "stop")]
            if self.include_usage:
                prompt, completion = usage_of(event.data)
                usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
                chunks.append(self.chunk(None, usage=usage))  # stream_options.include_usage: no choices, the usage
            return b"".join([*chunks, b"data: [DONE]\n\n"]), True
        if event.type == "error":
            return sse_data(error_event_object(event)), True
        return b"", False
