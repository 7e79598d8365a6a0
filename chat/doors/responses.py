"""OpenAI's Responses door (docs/doors.md): `POST /v1/responses`, `GET /v1/responses/{id}` and
its replay `?stream=true&starting_after=N`. A response is an answer of a turn: its `id` is the
assistant message's; `previous_response_id` continues that answer's session.

A streamed response is a rendering of the turn's events (`ResponseEvents`), numbered by
`sequence_number`; a replay renders the turn's kept events (docs/api.md, "Resume, stop and
approvals") the same way, so that the numbers match the first stream's. Once the turn is no longer
kept, a replay renders the stored answer as one delta.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from rest_framework import serializers

from chat.approvals.models import PausedTurn
from chat.doors.http import caller_of, rendered_sse
from chat.doors.openai import (
    SESSION_HEADER,
    OpenAIDoorView,
    content_text,
    error_event_object,
    no_tools,
    sse_data,
    turn_and_history,
    usage_of,
)
from chat.sessions.models import ChatMessage, ChatSession, MessageSource
from chat.turn import replay
from chat.turn.door import DoorError, DoorMessage, admit_door, admit_door_caller
from chat.turn.events import Turn, TurnEvent
from chat.users.models import ChatUser
from chatplatform.api.errors import Code, NotFound
from chatplatform.api.fields import StrictCharField
from chatplatform.db import on_db_thread

ROLES = ("user", "assistant", "system", "developer")


class ResponseRequestSerializer(serializers.Serializer):
    """The fields this door reads; OpenAI's others (instructions, temperature…) are ignored: the agent decides."""

    model = StrictCharField(max_length=128)
    input = serializers.JSONField()
    previous_response_id = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    stream = serializers.BooleanField(required=False, default=False)
    tools = serializers.ListField(required=False, allow_null=True, validators=[no_tools])

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        data["message"], data["history"] = turn_and_history(input_messages(data["input"]), "input")
        return data


def input_messages(value: Any) -> list[tuple[str, str]]:
    """`input` as (role, text): a string is the user's message; a list holds message items
    `{role, content}` (any other item: 400)."""
    if isinstance(value, str):
        return [("user", value)]
    if not isinstance(value, list) or not value:
        raise serializers.ValidationError({"input": "must be a string or a non-empty list of message items"})
    messages = []
    for index, item in enumerate(value):
        if not isinstance(item, dict) or item.get("type", "message") != "message" or item.get("role") not in ROLES:
            raise serializers.ValidationError({f"input[{index}]": f"only message items with a role of {', '.join(ROLES)} are supported"})
        messages.append((item["role"], content_text(item.get("content"), f"input[{index}].content")))
    return messages


# --- The response object ---------------------------------------------------------------------------

CITATION_MARK = re.compile(r"\[(\d+)\]")


def url_citations(text: str, citations: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Each `[n]` of the text that cites a knowledge base result with a URL, as a `url_citation`."""
    by_number = {citation["n"]: citation for citation in citations or [] if citation.get("sourceUrl")}
    found = []
    for mark in CITATION_MARK.finditer(text):
        citation = by_number.get(int(mark.group(1)))
        if citation is not None:
            found.append(
                {
                    "type": "url_citation",
                    "start_index": mark.start(),
                    "end_index": mark.end(),
                    "url": citation["sourceUrl"],
                    "title": citation.get("title") or "",
                }
            )
    return found


def output_text(text: str, citations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": url_citations(text, citations), "logprobs": []}


def response_object(
    response_id: str,
    model: str,
    created_at: float,
    status: str,
    *,
    output: list[dict[str, Any]] | None = None,
    done: dict[str, Any] | None = None,
    error: dict[str, str] | None = None,
    incomplete: str | None = None,
) -> dict[str, Any]:
    usage = None
    if done is not None:
        input_tokens, output_tokens = usage_of(done)
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(created_at),
        "status": status,
        "model": model,
        "output": output or [],
        "usage": usage,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": False,
        "temperature": None,
        "top_p": None,
        "tool_choice": "auto",
        "tools": [],
    }


def finished_status(done: dict[str, Any]) -> tuple[str, str | None]:
    """A `done`'s response status: incomplete when its user stopped it or it waits for an approval."""
    if done.get("stopped"):
        return "incomplete", "stopped"
    if done.get("status") == "awaiting_approval":
        return "incomplete", "awaiting_approval"
    return "completed", None


class ResponseEvents:
    """A turn's events as the Responses stream: `response.created`, `response.in_progress`, the
    output item and its text part added, `response.output_text.delta`…, their `done`s, then
    `response.completed` (`response.failed` for an error); each numbered by `sequence_number` from 0.
    Events numbered up to `starting_after` are rendered to nothing (a replay)."""

    def __init__(self, model: str, starting_after: int = -1, response_id: str = "") -> None:
        self.model, self.starting_after = model, starting_after
        self.created_at = time.time()
        self.id = response_id
        self.sequence = -1
        self.text: list[str] = []
        self.response: dict[str, Any] | None = None  # the finished response, once rendered

    @property
    def item_id(self) -> str:
        return f"msg_{self.id.replace('-', '')}"  # the answer's id is a UUID's canonical text

    def event(self, kind: str, **fields: Any) -> bytes:
        self.sequence += 1
        if self.sequence <= self.starting_after:
            return b""
        return b"event: " + kind.encode() + b"\n" + sse_data({"type": kind, "sequence_number": self.sequence, **fields})

    def in_item(self, kind: str, **fields: Any) -> bytes:
        """An event of the output item's text part."""
        return self.event(kind, item_id=self.item_id, output_index=0, content_index=0, **fields)

    def item(self, status: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.item_id, "type": "message", "role": "assistant", "status": status, "content": content}

    def render(self, event: TurnEvent) -> tuple[bytes, bool]:
        if event.type == "session":
            self.id = event.data["messageId"]
            started = response_object(self.id, self.model, self.created_at, "in_progress")
            return b"".join(
                [
                    self.event("response.created", response=started),
                    self.event("response.in_progress", response=started),
                    self.event("response.output_item.added", output_index=0, item=self.item("in_progress", [])),
                    self.in_item("response.content_part.added", part=output_text("")),
                ]
            ), False
        if event.type == "delta":
            self.text.append(event.data["text"])
            return self.in_item("response.output_text.delta", delta=event.data["text"], logprobs=[]), False
        if event.type == "done":
            return self.finished(event.data), True
        if event.type == "error":
            return self.failed(error_event_object(event)["error"]), True
        return b"", False

    def finished(self, done: dict[str, Any]) -> bytes:
        status, incomplete = finished_status(done)
        part = output_text(done["response"], done.get("citations"))
        item = self.item("completed" if status == "completed" else "incomplete", [part])
        self.response = response_object(self.id, self.model, self.created_at, status, output=[item], done=done, incomplete=incomplete)
        return b"".join(
            [
                self.in_item("response.output_text.done", text=part["text"], logprobs=[]),
                self.in_item("response.content_part.done", part=part),
                self.event("response.output_item.done", output_index=0, item=item),
                self.event("response.completed" if status == "completed" else "response.incomplete", response=self.response),
            ]
        )

    def failed(self, failure: dict[str, Any]) -> bytes:
        self.id = self.id or str(uuid.uuid4())  # failed before the turn named its answer
        partial = [self.item("incomplete", [output_text("".join(self.text))])] if self.text else []
        error = {"code": failure["code"], "message": failure["message"]}
        self.response = response_object(self.id, self.model, self.created_at, "failed", output=partial, error=error)
        return self.event("response.failed", response=self.response)


# --- The views -------------------------------------------------------------------------------------


def session_of_response(response_id: str, user: ChatUser) -> str:
    """The session of the user's answer `response_id`; 404 for anything else, another user's alike."""
    missing = NotFound(f"previous_response_id: response {response_id} not found")
    try:
        answer_id = uuid.UUID(response_id)
    except ValueError:
        raise missing from None
    answers = ChatMessage.objects.filter(pk=answer_id, source=MessageSource.ASSISTANT, session__user=user)
    session_id = answers.values_list("session_id", flat=True).first()
    if session_id is None:
        raise missing
    return str(session_id)


def response_not_found(response_id: str, headers: dict[str, str]) -> DoorError:
    return DoorError(404, Code.NOT_FOUND, f"response {response_id} not found", headers)


class ResponsesView(OpenAIDoorView):
    """`POST /v1/responses`: a `response`, or its events."""

    async def post(self, request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
        def read(user: ChatUser) -> DoorMessage:
            body = self.read_body(request, ResponseRequestSerializer)
            previous = body.get("previous_response_id")
            session_id = session_of_response(previous, user) if previous else None
            # The new message follows that response, whatever was said after it (docs/doors.md, "OpenAI Responses").
            return DoorMessage(body["model"], body["message"], session_id, body["history"], options=body, parent_message_id=previous)

        try:
            door = await admit_door(caller_of(request), read)
        except DoorError as error:
            return self.failed(error)
        body = door.request.options
        headers = {**door.headers, SESSION_HEADER: door.session_id}
        events = ResponseEvents(body["model"])
        if body["stream"]:
            return self.events(rendered_sse(door.events(), events.render), headers)
        try:
            done = await door.answer()
        except DoorError as error:
            return self.failed(error.with_headers(headers))
        events.id = done["messageId"]
        events.finished(done)
        return self.json(events.response, headers)


class ResponseView(OpenAIDoorView):
    """`GET /v1/responses/{id}`: a response, stored or still running; `?stream=true&starting_after=N`
    its events after N, then the turn live until it ends."""

    async def get(self, request: HttpRequest, responseId: str) -> HttpResponse | StreamingHttpResponse:
        try:
            caller = await admit_door_caller(caller_of(request))
            starting_after = self.starting_after(request, caller.headers)
            found = await self.find(responseId, caller.user.pk)
            if found is None:
                raise response_not_found(responseId, caller.headers)
        except DoorError as error:
            return self.failed(error)
        chat_app_id, turn = found
        if request.GET.get("stream") == "true":
            return self.events(rendered_sse(turn.reader(), ResponseEvents(chat_app_id, starting_after, responseId).render), caller.headers)
        return self.json(self.snapshot(responseId, chat_app_id, turn), caller.headers)

    def starting_after(self, request: HttpRequest, headers: dict[str, str]) -> int:
        value = request.GET.get("starting_after", "")
        if value == "":
            return -1
        if not value.isdigit():
            raise DoorError(400, Code.INVALID_REQUEST, "starting_after: must be a whole number of 0 or more", headers)
        return int(value)

    async def find(self, response_id: str, user_id: str) -> tuple[str, Turn] | None:
        """The response's chat app, and its turn's events: kept (running or recently ended), or
        made from the stored answer; None when the caller has no such response."""
        try:
            uuid.UUID(response_id)
        except ValueError:
            return None
        kept = await replay.turn_of(response_id)
        if kept is not None:
            session_id = next((event.data["sessionId"] for event in kept.events if event.type == "session"), None)
            chat_app_id = await on_db_thread(_chat_app_of_session)(session_id, user_id)
            return None if chat_app_id is None else (chat_app_id, kept)
        stored, paused = await on_db_thread(_stored_answer)(response_id, user_id)
        if stored is None:
            return None
        turn = Turn()
        turn.emit(TurnEvent("session", {"sessionId": str(stored.session_id), "messageId": response_id}))
        turn.emit(TurnEvent("delta", {"text": stored.message}))
        if stored.error:
            turn.emit(TurnEvent("error", {"error": stored.error.get("message", ""), "code": stored.error.get("code")}, 500))
        else:
            done = {"response": stored.message, "usage": stored.usage, "citations": stored.citations, "stopped": bool(stored.stop_reason)}
            if paused:
                done["status"] = "awaiting_approval"
            turn.emit(TurnEvent("done", done))
        turn.emit(None)
        return stored.session.chat_app_id, turn

    def snapshot(self, response_id: str, chat_app_id: str, turn: Turn) -> dict[str, Any]:
        """The response as its turn's events so far tell it."""
        events = ResponseEvents(chat_app_id, response_id=response_id)
        for event in turn.events:
            events.render(event)
        if events.response is not None:
            return events.response
        item = events.item("in_progress", [output_text("".join(events.text))])
        return response_object(response_id, chat_app_id, events.created_at, "in_progress", output=[item])


def _chat_app_of_session(session_id: str | None, user_id: str) -> str | None:
    return ChatSession.objects.filter(pk=session_id, user_id=user_id).values_list("chat_app_id", flat=True).first() if session_id else None


def _stored_answer(response_id: str, user_id: str) -> tuple[ChatMessage | None, bool]:
    """The user's stored answer, and whether its turn waits for approvals."""
    answer = (
        ChatMessage.objects.select_related("session")
        .filter(pk=response_id, source=MessageSource.ASSISTANT, session__user_id=user_id)
        .first()
    )
    return answer, answer is not None and PausedTurn.objects.filter(pk=answer.pk).exists()
