"""The session's ticket lock: turns of one session run one at a time, in arrival order, across
processes (docs/decisions.md, "The session's ticket lock").

Each arriving turn takes a ticket (`turn_next`, incremented under the session's row lock) and runs
when `turn_serving` reaches it; finishing (or failing) moves `turn_serving` on (chat.turn.handover). The row lock is
held only for these short claims, never across a model call. A running turn renews its lease
(`turn_renew`) every TURN_LEASE / 3; a ticket whose turn died with its process (or lost its
database) is skipped once its lease has run out. Every turn runs these statements, so they are
written out once per database (chatplatform.db) rather than compiled through the ORM each time."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from chat.sessions.models import ChatMessage, ChatSession, SessionStatus
from chat.turn.branches import CURRENT_BRANCH, HISTORY_LIMIT, Follows, earlier_messages, history_before, new_user_message
from chat.users.models import ChatUser
from chat.webhooks import delivery as webhooks
from chat.webhooks.models import WebhookEvent
from chatplatform import db
from chatplatform.api.errors import Code, Conflict, NotFound

TURN_LEASE = timedelta(seconds=30)


@dataclass(frozen=True)
class TurnClaim:
    """A turn's place on its session; `user_message` and `history` are set once it may run (a
    continuation after approvals has no user message: `continuation` with `served`). A
    regenerating turn's `user_message` is the question it answers again."""

    session_id: uuid.UUID
    user_id: str
    title: str  # the session's title when the turn was claimed ("" when untitled)
    ticket: int
    created: bool
    user_message: ChatMessage | None = None
    history: list[tuple[str, str]] = field(default_factory=list)  # (source, text), oldest first
    continuation: bool = False
    continuation_served: bool = False
    follows: Follows = CURRENT_BRANCH

    @property
    def served(self) -> bool:
        """Whether the turn may run now (its ticket reached)."""
        return self.continuation_served if self.continuation else self.user_message is not None


@functools.cache
def _take_ticket_sql(vendor: str, only_when_idle: bool = False) -> str:
    """The session's next ticket, under its row lock: (ticket, served at once, title), no row for a
    session that is unknown, another user's or another chat app's (or, `only_when_idle`, one whose
    turn is running: its lease not run out). Written out once, like the session's side of a
    finished turn (chat.turn.handover).
    RETURNING sees the row as updated; SET reads it as it was. A message arriving makes the session
    active again (a completed one reopens) and moves its lastUpdate, the clock of the idle-session
    completion."""
    table, column = db.sql_names(ChatSession)
    next_, serving, started = column("turn_next"), column("turn_serving"), column("turn_started")
    idle = f" AND ({next_} = {serving} OR {started} < %s)" if only_when_idle else ""
    return (
        f"UPDATE {table} SET {next_} = {next_} + 1, "
        f"{started} = CASE WHEN {next_} = {serving} THEN %s ELSE {started} END, "
        f"{column('status')} = '{SessionStatus.ACTIVE.value}', {column('last_update')} = %s "
        f"WHERE {column('session_id')} = %s AND {column('user')} = %s AND {column('chat_app_id')} = %s{idle} "
        f"RETURNING {next_} - 1 AS ticket, {next_} - 1 = {serving} AS served, {column('title')} AS title"
    )


def _take_ticket(
    session_id: uuid.UUID, *, user_id: str, chat_app_id: str, user_message: ChatMessage, only_when_idle: bool = False, store: bool = True
) -> tuple[int, bool, str] | None:
    """Take the session's next ticket and, when it is served at once, store the user message (unless
    not `store`: a regenerating turn's is stored already): all or nothing, in one statement on
    PostgreSQL (the INSERT a CTE that runs only when served)."""
    connection = connections["default"]
    field = functools.partial(db.column_field, ChatSession)
    claim_sql = _take_ticket_sql(connection.vendor, only_when_idle)
    moment = field("turn_started").get_db_prep_value(user_message.timestamp, connection)
    params = [
        moment,
        moment,
        field("session_id").get_db_prep_value(session_id, connection),
        user_id,
        chat_app_id,
    ]
    if only_when_idle:
        params.append(field("turn_started").get_db_prep_value(user_message.timestamp - TURN_LEASE, connection))
    if not store:
        with db.cursor(connection) as cursor:
            cursor.execute(claim_sql, params)
            row = cursor.fetchone()
    elif connection.vendor == "postgresql":
        insert_sql, insert_params = db.insert_if(user_message, "EXISTS (SELECT 1 FROM claimed WHERE served)")
        with db.cursor(connection) as cursor:
            cursor.execute(f"WITH claimed AS ({claim_sql}), stored AS ({insert_sql}) SELECT * FROM claimed", params + insert_params)
            row = cursor.fetchone()
        if row is not None and row[1]:
            db.stored(user_message)
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(claim_sql, params)
            row = cursor.fetchone()
            if row is not None and row[1]:
                db.write(user_message)
    return None if row is None else (int(row[0]), bool(row[1]), row[2])


def turn_claim(
    *,
    session_id: uuid.UUID | None,
    user: ChatUser,
    chat_app_id: str,
    agent_id: str,
    message: str,
    files: list[Any],
    invocation_mode: str | None,
    source: str,
    entity_id: str | None,
    only_when_idle: bool = False,
    history: list[tuple[str, str]] | None = None,
    new_session_id: uuid.UUID | None = None,
    follows: Follows = CURRENT_BRANCH,
) -> TurnClaim:
    """Take a ticket on the session (creating the session when `session_id` is None).

    When the ticket is served at once (the usual case) the user message is stored with it. 404
    INVALID_SESSION_ID for a session that is unknown, another user's or another chat app's;
    `only_when_idle` (concurrentTurns `reject`): 409 SESSION_BUSY while a turn of it runs.
    `history` ((source, text), oldest first) is stored before the message of a new session: a
    door's client may bring the conversation so far (docs/doors.md); `new_session_id` is the new
    session's id when the client chose it (an AG-UI thread). `follows`: where the user message goes
    on the session's tree (its parent checked by the caller), or the question a regenerating turn
    answers again.
    """
    now = timezone.now()
    if session_id is None:
        session = ChatSession(
            **({"pk": new_session_id} if new_session_id is not None else {}),
            user=user,
            chat_app_id=chat_app_id,
            agent_id=agent_id,
            invocation_mode=invocation_mode,
            source=source,
            entity_id=entity_id,
            turn_next=1,
            turn_serving=0,
            turn_started=now,
            create_date=now,
            last_update=now,
        )
        user_message = new_user_message(session.pk, user_id=user.pk, message=message, files=files, now=now)
        earlier = earlier_messages(session.pk, user_id=user.pk, history=history or [], now=now)
        for parent, child in zip([None, *earlier], [*earlier, user_message], strict=True):  # one straight branch
            child.parent = parent
        # The session.created outbox rows go in with the session, in the same statement (docs/api.md, "Webhooks").
        events = webhooks.outbox(WebhookEvent.SESSION_CREATED, session_id=session.pk, user_id=user.pk, chat_app_id=chat_app_id, at=now)
        db.write(session, *earlier, user_message, *events)
        return TurnClaim(session.pk, user.pk, "", 0, True, user_message, list(history or [])[-HISTORY_LIMIT:])
    question = follows.question
    user_message = question or new_user_message(session_id, user_id=user.pk, message=message, files=files, now=now)
    if question is None and not follows.current:
        user_message.parent_id = follows.parent_id
    taken = _take_ticket(
        session_id,
        user_id=user.pk,
        chat_app_id=chat_app_id,
        user_message=user_message,
        only_when_idle=only_when_idle,
        store=question is None,
    )
    if taken is None:
        if only_when_idle and ChatSession.objects.filter(pk=session_id, user_id=user.pk, chat_app_id=chat_app_id).exists():
            raise Conflict(f"session {session_id} is busy: a turn of it is running; send again once it is done", code=Code.SESSION_BUSY)
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID)
    ticket, served, title = taken
    if not served:
        return TurnClaim(session_id, user.pk, title, ticket, False, follows=follows)
    # A statement of its own, after the ticket: it sees the answer of the turn served before this one
    # even when that turn committed while this one waited for the row lock.
    history = history_before(session_id, before=user_message, follows=follows)
    return TurnClaim(session_id, user.pk, title, ticket, False, user_message, history, follows=follows)


def turn_try_start(*, claim: TurnClaim, message: str, files: list[Any]) -> TurnClaim | None:
    """The claim with its user message stored when its ticket is served now (a continuation's
    stores none); None to wait more."""
    now = timezone.now()
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().get(pk=claim.session_id)
        if session.turn_serving < claim.ticket and session.turn_started is not None and session.turn_started < now - TURN_LEASE:
            # The turn holding the session has been at it for longer than any turn runs: its process died.
            session.turn_serving += 1
            ChatSession.objects.filter(pk=session.pk).update(turn_serving=session.turn_serving, turn_started=now)
        if session.turn_serving != claim.ticket:
            return None
        ChatSession.objects.filter(pk=session.pk).update(turn_started=now)
        if claim.continuation:
            return dataclasses.replace(claim, continuation_served=True)
        follows = claim.follows
        user_message = follows.question
        if user_message is None:
            user_message = new_user_message(session.pk, user_id=claim.user_id, message=message, files=files, now=now)
            if not follows.current:
                user_message.parent_id = follows.parent_id
            db.write(user_message)
        history = history_before(session.pk, before=user_message, follows=follows)
    return TurnClaim(session.pk, claim.user_id, session.title, claim.ticket, claim.created, user_message, history, follows=follows)


def turn_claim_continuation(*, session_id: uuid.UUID, user_id: str) -> TurnClaim:
    """A ticket on the session for a turn that goes on after its approvals: no user message."""
    now = timezone.now()
    with transaction.atomic():
        session = ChatSession.objects.select_for_update().get(pk=session_id)
        ticket, served = session.turn_next, session.turn_next == session.turn_serving
        changes: dict[str, Any] = {"turn_next": ticket + 1, "last_update": now, "status": SessionStatus.ACTIVE}
        if served:
            changes["turn_started"] = now
        ChatSession.objects.filter(pk=session_id).update(**changes)
    return TurnClaim(session_id, user_id, session.title, ticket, False, continuation=True, continuation_served=served)


def turn_renew(*, session_id: uuid.UUID, ticket: int) -> None:
    """The turn holding the session is still at it: its lease starts again."""
    ChatSession.objects.filter(pk=session_id, turn_serving=ticket).update(turn_started=timezone.now())
