"""Admission: the one way into a turn, whatever the transport (JSON, SSE, WebSocket) or credential.

    admit(caller, body) → Admitted(budget, context, claim)   or raises Refused(error, budget)

In order: the admission every API request goes through (chatplatform.api.admission:
authenticate, count the request against the caller's Chat API budget); parse and validate the
body; apply the userId rule (docs/api.md, "Who may read what"); resolve the chat app and the agent
(404s); check who may use them (403s); refuse a user past a usage limit (429, chat.governance.usage);
assemble the prompt (chat.turn.prompt); take the turn's ticket on its session (404 for a session
that is not the caller's). The transport answers a refusal with its status, envelope and
rate-limit headers.

One hop to the database thread, and back, for all of it. When the caller is known without any
read (a bearer token verified before, a WebSocket's user) the budget is counted on the event loop
first (redis.asyncio); otherwise it is counted on the thread once the caller is known.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest
from rest_framework import exceptions, serializers

from agents.access import agent_access
from agents.selectors import agent_get
from chat.approvals.models import PausedTurn
from chat.approvals.selectors import session_waits_for_approval
from chat.approvals.services import approvals_supersede, decisions
from chat.chat_apps.features import concurrent_turns
from chat.chat_apps.selectors import chat_app_get, chat_app_usable_by
from chat.governance.usage import limits_for, usage_check
from chat.sessions.models import ChatMessage, ChatSession, MessageSource
from chat.sessions.selectors import is_session_answer, session_answer, session_get, session_uuid
from chat.turn import replay
from chat.turn.branches import CURRENT_BRANCH, Follows
from chat.turn.definitions import turn_definitions
from chat.turn.lock import TurnClaim, turn_claim, turn_claim_continuation
from chat.turn.prompt import TurnContext, build_context
from chat.turn.serializers import ConverseRequestSerializer, RegenerateRequestSerializer
from chat.users.authentication import socket_user, user_for_cookie, user_for_token
from chat.users.models import ChatUser
from chat.users.serializers import ChatUserSerializer
from chat.users.services import user_get_or_create
from chatplatform import inflight
from chatplatform.api import admission as api_admission
from chatplatform.api import bodies, ratelimit
from chatplatform.api.admission import Admission
from chatplatform.api.authentication import verified_subject
from chatplatform.api.errors import ApiError, Code, InvalidRequest, NotFound, PermissionDenied
from chatplatform.api.permissions import acting_for, is_admin
from chatplatform.db import on_db_thread

RATE_SCOPE = "chat"


class Caller:
    """Who sends a turn, as the transport found them. `authenticate` may read the database."""

    def __init__(self, address: str) -> None:
        self.address = address

    def known_now(self) -> str | None:
        """The rate-limit identity when it is known without any read; None otherwise."""
        return None

    def authenticate(self) -> ChatUser:
        raise exceptions.NotAuthenticated("authentication credentials were not provided")


class BearerCaller(Caller):
    def __init__(self, token: str, address: str) -> None:
        super().__init__(address)
        self.token = token

    def known_now(self) -> str | None:
        subject = verified_subject(f"Bearer {self.token}")
        return f"user:{subject}" if subject else None

    def authenticate(self) -> ChatUser:
        return user_for_token(self.token)


class CookieCaller(Caller):
    """The `session` cookie, with Django's CSRF check (the request holds the cookies and headers)."""

    def __init__(self, request: HttpRequest, address: str) -> None:
        super().__init__(address)
        self.request = request

    def authenticate(self) -> ChatUser:
        user = user_for_cookie(self.request)
        if user is None:
            raise exceptions.NotAuthenticated("authentication credentials were not provided")
        return user


class SocketCaller(Caller):
    """A WebSocket's user, authenticated when the socket opened with a token or the `session`
    cookie (`session_key`); each turn checks that credential and the user again."""

    def __init__(self, user: ChatUser, address: str, *, token: str | None = None, session_key: str | None = None) -> None:
        super().__init__(address)
        self.user, self.token, self.session_key = user, token, session_key

    def known_now(self) -> str | None:
        return f"user:{self.user.pk}"

    def authenticate(self) -> ChatUser:
        return socket_user(self.user, token=self.token, session_key=self.session_key)


@dataclass(frozen=True)
class GoingOn:
    """A paused turn whose approvals are all decided, ready to go on: its context and ticket again,
    its state when it paused, and the decisions (call id → (approved, reason))."""

    message_id: uuid.UUID
    context: TurnContext
    claim: TurnClaim
    state: dict[str, Any]
    decided: dict[str, tuple[bool, str]]


@dataclass(frozen=True)
class Admitted:
    """A turn that may run: its budget, its context, and its place on the session; and the paused
    turns of the session its message superseded, which go on before it."""

    budget: ratelimit.Budget
    context: TurnContext
    claim: TurnClaim
    going_on: list[GoingOn] = field(default_factory=list)


class Refused(Exception):
    """The turn may not run: `error` says why (rendered as the envelope), `budget` what is left of the caller's."""

    def __init__(self, error: Exception, budget: ratelimit.Budget | None) -> None:
        super().__init__(str(error))
        self.error, self.budget = error, budget


async def admit(caller: Caller, body: bytes | str, content_type: str = "application/json") -> Admitted:
    admitted = await on_db_thread(_admit)(caller, body, content_type, await counted_early(caller))
    if admitted.claim.user_message is None and concurrent_turns(admitted.context.features) == "interrupt":
        # Queued behind a running turn: stop it, and this one runs once it has stored what it streamed.
        await replay.stop(admitted.claim.session_id)
    return admitted


async def admit_regenerate(
    caller: Caller, session_id: str, message_id: str, body: bytes | str, content_type: str = "application/json"
) -> Admitted:
    """A turn that answers an answer's question again, as a new sibling of that answer (docs/api.md,
    "Regenerating an answer"): admitted as converse's turns are, its request the stored question's."""
    budget = await counted_early(caller)
    admitted = await on_db_thread(_admit_regenerate)(caller, session_id, message_id, body, content_type, budget)
    if admitted.claim.user_message is None and concurrent_turns(admitted.context.features) == "interrupt":
        await replay.stop(admitted.claim.session_id)
    return admitted


async def admit_action(caller: Caller) -> Admission:
    """A request about a session (resume, stop, an approval's decision): the caller, authenticated
    and counted as a Chat API request, in one hop to the database thread."""
    return await on_db_thread(admit_caller)(caller, await counted_early(caller))


async def counted_early(caller: Caller) -> ratelimit.Budget | None:
    """The caller's budget counted on the event loop when the caller is known without a read; None
    otherwise (counted on the database thread once known). 503 while the process shuts down."""
    if not inflight.accepting():
        raise Refused(ApiError("the server is shutting down; send it again", code=Code.SERVICE_UNAVAILABLE, status_code=503), None)
    identity = caller.known_now()
    if identity is None:
        return None
    try:
        return await ratelimit.ahit(RATE_SCOPE, identity)
    except Exception as exc:
        raise Refused(exc, None) from exc


def _admit(caller: Caller, body: bytes | str, content_type: str, budget: ratelimit.Budget | None) -> Admitted:
    admission = admit_caller(caller, budget)
    try:
        return admit_request(admission, validate(parse(body, content_type)))
    except Exception as exc:
        raise Refused(exc, admission.budget) from exc


def _admit_regenerate(
    caller: Caller, session_id: str, message_id: str, body: bytes | str, content_type: str, budget: ratelimit.Budget | None
) -> Admitted:
    admission = admit_caller(caller, budget)
    try:
        options = validate(parse(body, content_type), RegenerateRequestSerializer)
        request, question = _regenerating(admission.user, session_id, message_id, options)
        return admit_request(admission, validate(request), question=question)
    except Exception as exc:
        raise Refused(exc, admission.budget) from exc


def _regenerating(user: ChatUser, session_id: str, message_id: str, options: dict[str, Any]) -> tuple[dict[str, Any], ChatMessage]:
    """The converse request that asks an answer's question again, and that question. 404 for a
    session or an answer that is not the user's (another user's alike)."""
    session = session_get(session_id=session_id, user_id=acting_for(user, options.get("userId") or None))
    try:
        answer = session_answer(session_id=session.pk, message_id=uuid.UUID(str(message_id)), user_id=session.user_id)
    except ValueError:
        answer = None
    if answer is None:
        raise NotFound(f"message {message_id} not found")
    question = ChatMessage.objects.filter(pk=answer.parent_id, source=MessageSource.USER).first() if answer.parent_id else None
    if question is None:
        raise InvalidRequest(f"message {message_id} answers no question of this session", field="messageId")
    request = {
        "userId": session.user_id,
        "sessionId": str(session.pk),
        "chatAppId": session.chat_app_id,
        "agentId": session.agent_id,
        "message": question.message,
        "files": question.files or [],
        "features": options.get("features") or {},
        "invocationMode": session.invocation_mode,
        "source": session.source,
        **({"timezone": options["timezone"]} if options.get("timezone") else {}),
    }
    return request, question


def admit_request(
    admission: Admission,
    request: dict[str, Any],
    history: list[tuple[str, str]] | None = None,
    new_session_id: uuid.UUID | None = None,
    question: ChatMessage | None = None,
) -> Admitted:
    """A validated converse request of an admitted caller, checked and given its ticket. `history`
    ((source, text), oldest first) is stored before the message of a new session (the doors' history),
    `new_session_id` is that session's id when the door's client chose it. `question`: the stored
    question a regenerating turn answers again (docs/api.md, "Regenerating an answer")."""
    context = _context(request, admission.user)
    follows = Follows(question=question) if question is not None else _follows(request, context)
    # A new message denies the approvals its session waits for: those turns go on first, refused.
    going_on = _superseded(context.session_id) if context.session_id is not None else []
    claim = turn_claim(
        session_id=context.session_id,
        user=context.user,
        chat_app_id=context.chat_app_id,
        agent_id=context.agent_id,
        message=context.message,
        files=context.files,
        invocation_mode=context.invocation_mode,
        source=context.source,
        entity_id=context.entity_id,
        only_when_idle=concurrent_turns(context.features) == "reject",
        history=history or [],
        new_session_id=new_session_id,
        follows=follows,
    )
    return Admitted(admission.budget, context, claim, going_on)


def _follows(request: dict[str, Any], context: TurnContext) -> Follows:
    """Where the new message goes on the session's tree: `parentMessageId`, an assistant message of
    the session, or null for a new start; without it, the current branch (docs/api.md, "Branches")."""
    if "parentMessageId" not in request:
        return CURRENT_BRANCH
    parent_id = request["parentMessageId"]
    if parent_id is None:
        return Follows(parent_id=None, current=False)
    if context.session_id is None:
        raise InvalidRequest("names a message of a session: give that session's sessionId too", field="parentMessageId")
    # Whose session it is, the ticket checks (404); a parent outside the session is refused here.
    if not is_session_answer(session_id=context.session_id, message_id=parent_id):
        mine = ChatSession.objects.filter(pk=context.session_id, user_id=context.user.pk, chat_app_id=context.chat_app_id)
        if not mine.exists():
            raise NotFound(f"session {context.session_id} not found", code=Code.INVALID_SESSION_ID)
        raise InvalidRequest(f"{parent_id} is not an assistant message of session {context.session_id}", field="parentMessageId")
    return Follows(parent_id=parent_id, current=False)


def _superseded(session_id: uuid.UUID) -> list[GoingOn]:
    if not session_waits_for_approval(session_id):
        return []
    return [admit_going_on(message_id) for message_id in approvals_supersede(session_id=session_id)]


def admit_going_on(message_id: uuid.UUID) -> GoingOn:
    """A paused turn, claimed by whoever decided its last approval, readied to go on: its context
    rebuilt for its session's user (today's definitions and access rules) and a ticket taken."""
    paused = PausedTurn.objects.select_related("session__user").get(pk=message_id)
    user, session_id = paused.session.user, paused.session_id
    context = _context({**paused.state["request"], "sessionId": str(session_id), "userId": user.pk}, user, new_turn=False)
    claim = turn_claim_continuation(session_id=session_id, user_id=user.pk)
    return GoingOn(message_id, context, claim, paused.state, decisions(message_id))


def admit_caller(caller: Caller, budget: ratelimit.Budget | None = None) -> Admission:
    """The caller, authenticated and counted (chatplatform.api.admission); Refused past the budget or without a user."""
    admission = api_admission.admit(caller.authenticate, address=caller.address, scope=RATE_SCOPE, budget=budget)
    if admission.refusal is not None:
        raise Refused(admission.refusal, admission.budget)
    return admission


# --- The body ----------------------------------------------------------------------------------------


def parse(body: bytes | str, content_type: str) -> Any:
    """The JSON body (`{}` when empty): 415 for another media type; 413 and 400 as every API body
    (chatplatform.api.bodies: too large, not JSON, nested too deep)."""
    media_type = content_type.partition(";")[0].strip().lower()
    if media_type != "application/json":
        raise exceptions.UnsupportedMediaType(media_type)
    if not body:
        return {}
    return bodies.load_json(body)


_checkers = threading.local()


def validate(body: Any, checker: type[serializers.Serializer] = ConverseRequestSerializer) -> dict[str, Any]:
    """The converse body (or a door's, by its serializer) checked: 400 naming the field and the
    rule. Each thread keeps one serializer of each and runs its validation (what `is_valid` runs):
    a new serializer deep-copies its declared fields, a quarter of a turn's admission."""
    kept: dict[Any, Any] = _checkers.__dict__  # serializer class → its serializer
    serializer = kept.get(checker)
    if serializer is None:
        serializer = kept[checker] = checker()
    return dict(serializer.run_validation(body))


# --- Who acts, on what ------------------------------------------------------------------------------


def user_fields(user: ChatUser) -> dict[str, Any]:
    """A user's wire fields, as prompts and access conditions see them (docs/access-rules.md)."""
    return dict(ChatUserSerializer(user).data)


def _context(request: dict[str, Any], caller: ChatUser, *, new_turn: bool = True) -> TurnContext:
    requested_user = request.get("userId") or caller.pk
    if requested_user != caller.pk and not is_admin(caller):
        raise PermissionDenied("insufficient permissions: userId must be your own")
    user = caller if requested_user == caller.pk else user_get_or_create(user_id=requested_user)
    read = turn_definitions.reader()
    app = read(("chat-app", request["chatAppId"]), lambda: chat_app_get(chat_app_id=request["chatAppId"]))
    if not chat_app_usable_by(app, user):
        raise PermissionDenied(
            f"insufficient permissions: chat app {app.pk} {'is disabled' if not app.enabled else 'is not available to you'}"
        )
    agent = read(("agent", request["agentId"]), lambda: agent_get(agent_id=request["agentId"]))
    # Whether the session is this user's and this chat app's is checked where the ticket is taken (404).
    session_id = session_uuid(request["sessionId"]) if request.get("sessionId") else None
    fields = user_fields(user)
    decision = agent_access(access_rules=agent.access_rules, rollout_policy=agent.rollout_policy, user=fields)
    if not decision.allowed:
        raise PermissionDenied(decision.reason)
    if new_turn:  # a paused turn going on already runs: it may finish past a limit (docs/api.md, "Usage limits")
        usage_check(user_id=user.pk, limits=limits_for(app_features=app.features or {}, chat_app_id=app.pk))
    return build_context(request=request, user=user, user_fields=fields, app=app, agent=agent, session_id=session_id, read=read)
