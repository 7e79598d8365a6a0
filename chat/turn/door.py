"""The one admission of the protocol doors (docs/doors.md): OpenAI's Chat Completions and
Responses, AG-UI, A2A, MCP.

    admit_door(caller, read) → DoorTurn     read(user) → DoorMessage: the door's request, read once
                                            the caller is authenticated and counted
        .request, .session_id, .headers     known before any event (a new session is created here)
        .events()                           start the turn: the reader of its one event stream
        .answer()                           start the turn: its `done` fields
    raises DoorError(status, code, message, headers): each door renders it in its own shape

The same admission as converse (chat.turn.admission): authentication, the rate limit, access
rules, features, the session's ticket; the turn is the converse turn of the chat app's agent. A
chat app the caller may not use answers as an unknown one does (404 INVALID_CHAT_APP_ID).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rest_framework import exceptions

from agents.access import agent_access
from chat.chat_apps.features import concurrent_turns
from chat.chat_apps.models import ChatApp
from chat.chat_apps.selectors import chat_app_get, chat_app_usable_by
from chat.sessions.models import TurnSource
from chat.turn import replay
from chat.turn.admission import Admitted, Caller, Refused, admit_caller, admit_request, counted_early, user_fields, validate
from chat.turn.definitions import turn_definitions
from chat.turn.events import collect
from chat.turn.run import start
from chat.turn.store import Reader
from chat.users.models import ChatUser
from chatplatform.api import ratelimit
from chatplatform.api.errors import Code, NotFound, PermissionDenied
from chatplatform.api.exceptions import handle
from chatplatform.db import on_db_thread


@dataclass
class DoorError(Exception):
    """Why a door's request is refused: its HTTP status, the platform's code (docs/api.md,
    "Envelope"), a message naming the field and the rule, and the headers to send (rate limit,
    WWW-Authenticate, Retry-After)."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.message

    def with_headers(self, headers: dict[str, str]) -> DoorError:
        """The same refusal, sending `headers` too (a door's own, such as the session's)."""
        return DoorError(self.status, self.code, self.message, {**self.headers, **headers})


def door_error(exc: Exception, budget: ratelimit.Budget | None = None) -> DoorError:
    """Any failure as a DoorError, as the one exception handler renders it."""
    if isinstance(exc, DoorError):
        return exc
    if isinstance(exc, Refused):
        budget, exc = exc.budget, exc.error  # budget first: mypy widens exc as soon as it is reassigned
    response = handle(exc)
    headers = {name: value for name, value in response.items() if name.lower() != "content-type"}
    headers.update(budget.headers() if budget is not None else {})
    data = response.data
    return DoorError(response.status_code, data.get("code") or Code.INTERNAL_ERROR, data.get("error") or "", headers)


def unknown_chat_app(chat_app_id: str) -> NotFound:
    """What a door answers for a chat app that does not exist, and for one the caller may not use."""
    return NotFound(f"chat app {chat_app_id} not found", code=Code.INVALID_CHAT_APP_ID)


def usable_chat_app(chat_app_id: str, user: ChatUser) -> ChatApp:
    """The chat app, when `user` may use it and its agent's access rules let them in (as a turn's
    admission decides); otherwise the unknown chat app's 404. For a door's request that names a
    chat app but runs no turn (an A2A agent card)."""
    app = ChatApp.objects.select_related("agent").filter(chat_app_id=chat_app_id).first()
    if app is None or not chat_app_usable_by(app, user):
        raise unknown_chat_app(chat_app_id)
    agent = app.agent
    if not agent_access(access_rules=agent.access_rules, rollout_policy=agent.rollout_policy, user=user_fields(user)).allowed:
        raise unknown_chat_app(chat_app_id)
    return app


@dataclass(frozen=True)
class DoorMessage:
    """A door's request, read: the chat app, the turn's message, the session it continues (or
    None: a new one, whose earlier messages are `history`, (`user` | `assistant`, text) oldest
    first), and what else the door read (`options`: its own fields, handed back on the DoorTurn).
    `new_session_id`: the id a new session takes when the client chose it (an AG-UI thread);
    `tool_events`: the turn emits each tool call and its result (`tool_call`, `tool_result`);
    `client_tools`: the client's own tools, offered to the model beside the agent's."""

    chat_app_id: str
    message: str
    session_id: str | None = None
    history: list[tuple[str, str]] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    new_session_id: uuid.UUID | None = None
    tool_events: bool = False
    client_tools: list[dict[str, Any]] = field(default_factory=list)
    # The answer the message follows on its session's tree (docs/api.md, "Branches"); None: the current branch.
    parent_message_id: str | None = None


class DoorTurn:
    """An admitted turn: its request, session and headers now, its events once started (once).
    Start it whatever happens: the admission took the session's ticket and stored the message."""

    def __init__(self, admitted: Admitted, request: DoorMessage) -> None:
        self.admitted, self.request = admitted, request
        self.session_id = str(admitted.claim.session_id)
        self.headers = admitted.budget.headers()
        self._reader: Reader | None = None

    def events(self) -> Reader:
        """Start the turn; its events (session, delta…, trace…, approval…, done, title? or error).
        Leaving them early does not stop the turn: it runs on and stores its answer."""
        if self._reader is None:
            self._reader = start(self.admitted).reader()
        return self._reader

    async def answer(self) -> dict[str, Any]:
        """Start the turn and wait for its `done` fields; DoorError when it fails."""
        try:
            return await collect(self.events())
        except Exception as exc:
            raise door_error(exc, self.admitted.budget) from exc


@dataclass(frozen=True)
class DoorCaller:
    """A door's caller, authenticated and counted, for a request that runs no turn (lists, retrieval)."""

    user: ChatUser
    headers: dict[str, str]


async def admit_door(caller: Caller, read: Callable[[ChatUser], DoorMessage]) -> DoorTurn:
    """Admit a door's turn. `read(user)` reads the door's request once the caller is authenticated
    and counted, as converse reads its body: on the database thread (it may query for the user),
    and what it raises is the refusal (a DRF ValidationError: 400 naming the field and the rule)."""
    try:
        admitted, request = await on_db_thread(_admit_door)(caller, read, await counted_early(caller))
    except Exception as exc:
        raise door_error(exc) from exc
    if admitted.claim.user_message is None and concurrent_turns(admitted.context.features) == "interrupt":
        await replay.stop(admitted.claim.session_id)  # as converse: the running turn stops, this one follows
    return DoorTurn(admitted, request)


def _admit_door(caller: Caller, read: Callable[[ChatUser], DoorMessage], budget: ratelimit.Budget | None) -> tuple[Admitted, DoorMessage]:
    admission = admit_caller(caller, budget)
    try:
        request = read(admission.user)
        chat_app_id = request.chat_app_id
        app = turn_definitions.reader()(("chat-app", chat_app_id), lambda: chat_app_get(chat_app_id=chat_app_id))
        body = {"chatAppId": chat_app_id, "agentId": app.agent_id, "message": request.message, "features": {}, "source": TurnSource.USER}
        if request.session_id:
            body["sessionId"] = request.session_id
        if request.parent_message_id:
            body["parentMessageId"] = request.parent_message_id
        try:
            history = None if request.session_id else request.history
            admitted = admit_request(admission, validate(body), history=history, new_session_id=request.new_session_id)
        except (PermissionDenied, exceptions.PermissionDenied):
            raise unknown_chat_app(chat_app_id) from None
    except Exception as exc:
        raise Refused(exc, admission.budget) from exc
    admitted.context.tool_events, admitted.context.client_tools = request.tool_events, request.client_tools
    return admitted, request


async def admit_door_caller(caller: Caller) -> DoorCaller:
    """The caller of a door request that runs no turn: authenticated and counted as a Chat API request."""
    try:
        admission = await on_db_thread(admit_caller)(caller, await counted_early(caller))
    except Exception as exc:
        raise door_error(exc) from exc
    return DoorCaller(admission.user, admission.budget.headers())
