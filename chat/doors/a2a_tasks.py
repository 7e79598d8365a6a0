"""An A2A task is a turn (docs/doors.md, "A2A"): its `id` the answer's (the assistant message's
`messageId`), its `contextId` the session's. `TaskEvents` tells the task from the turn's events;
a task is found from the turn's kept events while it runs (from any process, chat.turn.replay) and
from the stored answer once it is no longer kept."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import MessageToDict

from chat.approvals.models import PausedTurn
from chat.sessions.models import ChatMessage, ChatSession, MessageSource
from chat.turn import replay
from chat.turn.events import Turn, TurnEvent
from chat.users.models import ChatUser
from chatplatform.api.errors import Code
from chatplatform.db import on_db_thread

ANSWER = "answer"  # the artifact holding the answer's text


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
