"""The AG-UI door (docs/doors.md, "AG-UI"): `POST /api/ag-ui/{chatAppId}` runs the chat app's agent
for a `RunAgentInput` and answers AG-UI 1.0 events over Server-Sent Events, built with the official
`ag-ui-protocol` types and encoder. The thread is the session; the turn is converse's, admitted by
the doors' one admission (chat.turn.door).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pydantic
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
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
from django.db import transaction
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from rest_framework import serializers

from chat.approvals.models import ApprovalStatus, ToolApproval
from chat.approvals.services import approval_decide
from chat.doors.http import DoorView, caller_of, rendered_sse, sse_response
from chat.doors.openai import content_text, turn_and_history
from chat.sessions.models import ChatSession
from chat.sessions.selectors import session_get
from chat.turn import go_on, resume
from chat.turn.admission import parse
from chat.turn.door import DoorError, DoorMessage, admit_door, admit_door_caller, door_error
from chat.turn.events import TurnEvent
from chat.turn.replay import abandon_calls, answer_call
from chat.users.models import ChatUser
from chatplatform.api.errors import Code
from chatplatform.db import on_db_thread

NO_RESULT = "no result: the user sent a new message instead"
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
    thread = thread_of(run)
    if run.messages and run.messages[-1].role != "user":
        # Another message last (an assistant's) would run the last user message again.
        raise serializers.ValidationError({"messages": "must end with the user's message (or with tool results)"})
    texts: list[tuple[str, str]] = [(message.role, text_of(message, index)) for index, message in enumerate(run.messages)]
    message, history = turn_and_history(texts, "messages")
    known = ChatSession.objects.filter(pk=thread).exists()  # whose it is: the admission checks (404)
    options = {"threadId": run.thread_id, "runId": run.run_id}
    tools = [{"name": tool.name, "description": tool.description, "parameters": tool.parameters} for tool in run.tools or []]
    if known:
        return DoorMessage(chat_app_id, message, str(thread), options=options, tool_events=True, client_tools=tools)
    return DoorMessage(chat_app_id, message, None, history, options=options, new_session_id=thread, tool_events=True, client_tools=tools)


def thread_of(run: RunAgentInput) -> uuid.UUID:
    try:
        return uuid.UUID(run.thread_id)
    except ValueError:
        raise serializers.ValidationError({"threadId": "must be a UUID: the thread is the session"}) from None


def kind_of(body: Callable[[], bytes]) -> str:
    """`resume` for a run answering interrupts, `results` for one that ends with tool results (of
    the frontend's tools), `run` for a new message. A body that is not JSON (or too large) is read,
    and refused, as a run's: after the caller's credentials."""
    try:
        data = json.loads(body() or b"{}")
    except Exception:
        return "run"
    if not isinstance(data, dict):
        return "run"
    messages = data.get("messages")
    if data.get("resume"):
        return "resume"
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "tool":
        return "results"
    return "run"


def results_of(run: RunAgentInput) -> list[tuple[str, str]]:
    """The tool results ending the input, (toolCallId, content) oldest first."""
    results = []
    for index in range(len(run.messages) - 1, -1, -1):
        message = run.messages[index]
        if message.role != "tool":
            break
        results.append((message.tool_call_id, content_text(message.model_dump(by_alias=True)["content"], f"messages[{index}].content")))
    return results[::-1]


def decide(user: ChatUser, run: RunAgentInput, chat_app_id: str) -> tuple[uuid.UUID, bool, list[Interrupt]]:
    """Each `resume` entry decides the approval its interrupt stands for (`resolved`: approved unless
    its payload says `approved: false`; `cancelled`: denied; the payload's `reason` kept), all or
    none. The paused answer's id, whether it may go on now, and the interrupts still open."""
    session = session_get(session_id=thread_of(run), chat_app_id=chat_app_id)
    with transaction.atomic():
        for entry in run.resume or []:
            payload = entry.payload if isinstance(entry.payload, dict) else {}
            approve = entry.status == "resolved" and payload.get("approved") is not False
            reason = str(payload.get("reason") or "")
            approval, ready = approval_decide(
                approval_id=entry.interrupt_id, session_id=session.pk, user=user, approve=approve, reason=reason
            )
    pending = ToolApproval.objects.filter(message_id=approval.message_id, status=ApprovalStatus.PENDING).order_by("created_at")
    interrupts = [interrupt_of(str(a.pk), a.function, a.arguments, a.expires_at.isoformat()) for a in pending]
    return approval.message_id, ready, interrupts


def interrupt_of(approval_id: str, function: str, arguments: Any, expires_at: str | None) -> Interrupt:
    """A pending approval as an AG-UI interrupt, answered by a `resume` entry naming its id."""
    message = f"approve the call of {function} with {json.dumps(arguments)}"
    return Interrupt(id=approval_id, reason="tool_approval", message=message, expires_at=expires_at)


def text_of(message: Any, index: int) -> str:
    """The text of a user or assistant message (400 for a part that is not text); "" for the others."""
    if message.role not in ("user", "assistant"):
        return ""
    return content_text(message.model_dump(by_alias=True, exclude_none=True).get("content"), f"messages[{index}].content")


class AgUiView(DoorView):
    """`POST /api/ag-ui/{chatAppId}`: a run, as AG-UI events; a refusal before the run in the envelope."""

    async def post(self, request: HttpRequest, chatAppId: str) -> HttpResponse | StreamingHttpResponse:
        kind = kind_of(lambda: self.body(request))
        if kind == "resume":
            return await self.resume(request, chatAppId)
        if kind == "results":
            return await self.results(request, chatAppId)

        def read(user: ChatUser) -> DoorMessage:
            return read_run(parse(self.body(request), request.content_type or ""), chatAppId)

        try:
            door = await admit_door(caller_of(request), read)
        except DoorError as error:
            return self.refused(error)
        if door.request.session_id is not None:  # a turn waiting for a frontend tool's result would hold this one back
            await abandon_calls(uuid.UUID(door.session_id), NO_RESULT)
        options, tools = door.request.options, {tool["name"] for tool in door.request.client_tools}
        events = RunEvents(options["threadId"], options["runId"], client_tools=tools)
        return self.events(rendered_sse(door.events(), events.render), door.headers)

    async def results(self, request: HttpRequest, chat_app_id: str) -> HttpResponse | StreamingHttpResponse:
        """A run bringing the results of the frontend's tools: the turn waiting for them (it ran on
        since the last run ended at their calls) gets them, and this run follows it from there."""
        try:
            caller = await admit_door_caller(caller_of(request))
        except DoorError as error:
            return self.refused(error)
        try:
            run = run_input(parse(self.body(request), request.content_type or ""))
            thread, results = thread_of(run), results_of(run)
            await on_db_thread(session_get)(session_id=thread, user_id=caller.user.pk, chat_app_id=chat_app_id)
            for call_id, content in results:
                if not await answer_call(thread, call_id, content):
                    raise serializers.ValidationError({"messages": f"no call {call_id} of this thread waits for its result"})
            reader = await resume(thread, None)
            if reader is None:
                raise serializers.ValidationError({"messages": "no turn of this thread waits for tool results"})
        except Exception as exc:
            return self.refused(door_error(exc).with_headers(caller.headers))
        tools = {tool.name for tool in run.tools or []}
        events = RunEvents(run.thread_id, run.run_id, client_tools=tools, answered={call_id for call_id, _ in results})
        return self.events(rendered_sse(reader, events.render), caller.headers)

    async def resume(self, request: HttpRequest, chat_app_id: str) -> HttpResponse | StreamingHttpResponse:
        """A run answering the interrupts of the last: the approvals decided, the paused turn goes
        on in this run (docs/api.md, "Resume, stop and approvals"); while some stay open, the run
        ends at once with them."""
        try:
            caller = await admit_door_caller(caller_of(request))
        except DoorError as error:
            return self.refused(error)
        try:
            run = run_input(parse(self.body(request), request.content_type or ""))
            message_id, ready, interrupts = await on_db_thread(decide)(caller.user, run, chat_app_id)
        except Exception as exc:
            return self.refused(door_error(exc).with_headers(caller.headers))
        events = RunEvents(run.thread_id, run.run_id, resumed=True)
        if not ready:
            return self.events(waiting(events, interrupts), caller.headers)
        going = await go_on(message_id, tool_events=True)
        return self.events(rendered_sse(going.reader(), events.render), caller.headers)

    def events(self, chunks: AsyncIterator[bytes], headers: dict[str, str]) -> StreamingHttpResponse:
        response = sse_response(chunks)
        response["Allow"] = self.allowed()
        for name, value in headers.items():
            response[name] = value
        return response

    def refused(self, error: DoorError) -> HttpResponse:
        response = self.answer({"success": False, "error": error.message, "code": error.code}, None, error.status)
        for name, value in error.headers.items():
            response[name] = value
        return response


async def waiting(events: RunEvents, interrupts: list[Interrupt]) -> AsyncIterator[bytes]:
    """A run that only says which interrupts are still open."""
    outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
    finished = RunFinishedEvent(thread_id=events.thread_id, run_id=events.run_id, outcome=outcome)
    yield events.encode([RunStartedEvent(thread_id=events.thread_id, run_id=events.run_id), finished])


class RunEvents:
    """A turn's events as AG-UI events: RUN_STARTED; the text as TEXT_MESSAGE_START / CONTENT / END
    (a new assistant message after tool results); each tool call as TOOL_CALL_START / ARGS / END, its result
    as TOOL_CALL_RESULT; RUN_FINISHED (an interrupt outcome when calls wait for approval, cancelled
    when its user stopped it) or RUN_ERROR."""

    def __init__(
        self, thread_id: str, run_id: str, *, resumed: bool = False, client_tools: set[str] | None = None, answered: set[str] | None = None
    ) -> None:
        self.thread_id, self.run_id = thread_id, run_id
        self.client_tools = client_tools or set()  # a call of one ends the run
        self.answered = set(answered or ())  # calls whose results this run brought: their results are the client's
        self.skipping = set(self.answered)  # the turn's events up to these calls went out in the last run
        self.encoder = EventEncoder()
        self.started = False
        self.message_id = ""  # the answer's, from the `session` event
        self.part = 1  # the assistant message being written: the answer's, then one after each tool result
        # A run going on after approvals or tool results: its text follows their calls' results.
        self.after_result = resumed or bool(answered)
        self.open_text = ""  # the text message being written, if any
        self.interrupts: list[Interrupt] = []

    def encode(self, events: list[BaseEvent]) -> bytes:
        return "".join(self.encoder.encode(event) for event in events).encode()

    def render(self, event: TurnEvent) -> tuple[bytes, bool]:
        if self.skipping and event.type not in ("done", "error"):
            if event.type == "session":
                self.message_id = event.data["messageId"]
            elif event.type == "tool_call":
                self.skipping.discard(event.data["callId"])
            return b"", False
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
            if data["name"] in self.client_tools:  # the frontend runs it: its result comes with the next run
                pending = RunFinishedSuccessOutcome(pending_tool_call_ids=[call_id])
                events.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=pending))
                return self.encode(events), True
        elif event.type == "tool_result":
            call_id, self.after_result = data["callId"], True
            if call_id not in self.answered:
                answer = ToolCallResultEvent(message_id=f"{call_id}:result", tool_call_id=call_id, content=data["content"], role="tool")
                events.append(answer)
        elif event.type == "approval":
            self.interrupts.append(interrupt_of(data["approvalId"], data["function"], data["arguments"], data.get("expiresAt")))
        elif event.type == "done":
            events += self.close_text()
            outcome: Any = RunFinishedInterruptOutcome(interrupts=self.interrupts) if self.interrupts else None
            if data.get("stopped"):  # stopped by its user (docs/api.md, "Resume, stop and approvals")
                outcome = RunFinishedCancelledOutcome()
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
