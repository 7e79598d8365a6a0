"""The AG-UI door (docs/doors.md, "AG-UI"): `POST /api/ag-ui/{chatAppId}` runs the chat app's agent
for a `RunAgentInput` and answers AG-UI 1.0 events over Server-Sent Events, built with the official
`ag-ui-protocol` types and encoder. The thread is the session; the turn is converse's, admitted by
the doors' one admission (chat.turn.door).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pydantic
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from rest_framework import serializers

from chat.doors.http import DoorView, caller_of, rendered_sse, sse_response
from chat.doors.openai import content_text, turn_and_history
from chat.sessions.models import ChatSession
from chat.turn.admission import parse
from chat.turn.door import DoorError, DoorMessage, admit_door
from chat.turn.events import TurnEvent
from chat.users.models import ChatUser
from chatplatform.api.errors import Code

ROLES = {"developer", "system", "assistant", "user", "tool", "activity", "reasoning"}


def field_of(location: tuple[Any, ...]) -> str:
    """A pydantic error's location as the body's field: `messages[0].content` (the message's role,
    pydantic's discriminator, left out)."""
    path = ""
    for index, part in enumerate(location):
        if isinstance(part, int):
            path += f"[{part}]"
        elif not (index and isinstance(location[index - 1], int) and part in ROLES):
            path += f".{part}" if path else str(part)
    return path or "body"


def run_input(body: Any) -> RunAgentInput:
    """The body as AG-UI's `RunAgentInput`: 400 naming the first field that is not one."""
    try:
        return RunAgentInput.model_validate(body)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        raise serializers.ValidationError({field_of(error["loc"]): error["msg"]}) from None


def read_run(body: Any, chat_app_id: str) -> DoorMessage:
    """The turn of a run: the last `user` message; the thread is the session (an unknown id starts
    one with that id, the earlier user and assistant messages its history)."""
    run = run_input(body)
    if run.tools:
        raise serializers.ValidationError({"tools": "frontend tools are not supported yet by this door (docs/doors.md, AG-UI)"})
    try:
        thread = uuid.UUID(run.thread_id)
    except ValueError:
        raise serializers.ValidationError({"threadId": "must be a UUID: the thread is the session"}) from None
    texts = [(message.role, text_of(message, index)) for index, message in enumerate(run.messages)]
    message, history = turn_and_history(texts, "messages")
    known = ChatSession.objects.filter(pk=thread).exists()  # whose it is: the admission checks (404)
    options = {"threadId": run.thread_id, "runId": run.run_id}
    if known:
        return DoorMessage(chat_app_id, message, str(thread), options=options, tool_events=True)
    return DoorMessage(chat_app_id, message, None, history, options=options, new_session_id=thread, tool_events=True)


def text_of(message: Any, index: int) -> str:
    """The text of a user or assistant message (400 for a part that is not text); "" for the others."""
    if message.role not in ("user", "assistant"):
        return ""
    return content_text(message.model_dump(by_alias=True, exclude_none=True).get("content"), f"messages[{index}].content")


class AgUiView(DoorView):
    """`POST /api/ag-ui/{chatAppId}`: a run, as AG-UI events; a refusal before the run in the envelope."""

    async def post(self, request: HttpRequest, chatAppId: str) -> HttpResponse | StreamingHttpResponse:
        def read(user: ChatUser) -> DoorMessage:
            return read_run(parse(self.body(request), request.content_type or ""), chatAppId)

        try:
            door = await admit_door(caller_of(request), read)
        except DoorError as error:
            return self.refused(error)
        options = door.request.options
        response = sse_response(rendered_sse(door.events(), RunEvents(options["threadId"], options["runId"]).render))
        response["Allow"] = self.allowed()
        for name, value in door.headers.items():
            response[name] = value
        return response

    def refused(self, error: DoorError) -> HttpResponse:
        response = self.answer({"success": False, "error": error.message, "code": error.code}, None, error.status)
        for name, value in error.headers.items():
            response[name] = value
        return response


class RunEvents:
    """A turn's events as AG-UI events: RUN_STARTED; the text as TEXT_MESSAGE_START / CONTENT / END
    (a new assistant message after tool results); each tool call as TOOL_CALL_START / ARGS / END, its result
    as TOOL_CALL_RESULT; RUN_FINISHED (an interrupt outcome when calls wait for approval) or RUN_ERROR."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        self.thread_id, self.run_id = thread_id, run_id
        self.encoder = EventEncoder()
        self.started = False
        self.message_id = ""  # the answer's, from the `session` event
        self.part = 1  # the assistant message being written: the answer's, then one after each tool result
        self.after_result = False
        self.open_text = ""  # the text message being written, if any
        self.interrupts: list[Interrupt] = []

    def encode(self, events: list[BaseEvent]) -> bytes:
        return "".join(self.encoder.encode(event) for event in events).encode()

    def render(self, event: TurnEvent) -> tuple[bytes, bool]:
        events: list[BaseEvent] = []
        if not self.started:
            self.started = True
            events.append(RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))
        data, last = event.data, event.type in ("done", "error")
        if event.type == "session":
            self.message_id = data["messageId"]
        elif event.type == "delta":
            if not self.open_text:
                self.open_text = self.assistant_message()
                events.append(TextMessageStartEvent(message_id=self.open_text, role="assistant"))
            events.append(TextMessageContentEvent(message_id=self.open_text, delta=data["text"]))
        elif event.type == "tool_call":
            events += self.close_text()
            call_id = data["callId"]
            events += [
                ToolCallStartEvent(tool_call_id=call_id, tool_call_name=data["name"], parent_message_id=self.assistant_message()),
                ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(data["arguments"])),
                ToolCallEndEvent(tool_call_id=call_id),
            ]
        elif event.type == "tool_result":
            call_id, self.after_result = data["callId"], True
            events.append(ToolCallResultEvent(message_id=f"{call_id}:result", tool_call_id=call_id, content=data["content"], role="tool"))
        elif event.type == "approval":
            message = f"approve the call of {data['function']} with {json.dumps(data['arguments'])}"
            interrupt = Interrupt(id=data["approvalId"], reason="tool_approval", message=message, expires_at=data.get("expiresAt"))
            self.interrupts.append(interrupt)
        elif event.type == "done":
            events += self.close_text()
            outcome = RunFinishedInterruptOutcome(interrupts=self.interrupts) if self.interrupts else None
            result = {"sessionId": data["sessionId"], "messageId": data["messageId"]}
            events.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, result=result, outcome=outcome))
        elif event.type == "error":
            events += self.close_text()
            events.append(RunErrorEvent(message=data.get("error") or "the run failed", code=data.get("code") or Code.INTERNAL_ERROR))
        return self.encode(events), last

    def assistant_message(self) -> str:
        """The id of the assistant message text and calls go into: the stored answer's, then (as the
        model's next response follows the tool results) `<answer id>:2`, `:3`…"""
        if self.after_result:
            self.part, self.after_result = self.part + 1, False
        return self.message_id if self.part == 1 else f"{self.message_id}:{self.part}"

    def close_text(self) -> list[BaseEvent]:
        if not self.open_text:
            return []
        closing, self.open_text = self.open_text, ""
        return [TextMessageEndEvent(message_id=closing)]
