"""Writes on chat records."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, connections, transaction
from django.db.models import F
from django.utils import timezone
from rest_framework import serializers

from agents.models import AgentDefinition
from chat import files as chat_files
from chat import selectors, webhooks
from chat.models import (
    ChatApp,
    ChatFile,
    ChatMessage,
    ChatSession,
    ChatSessionFeedback,
    ChatUser,
    FeedbackComment,
    MessageSource,
    SessionStatus,
    TestType,
    WebhookEvent,
)
from chat.serializers import AGENT_NOT_FOUND, validate_chat_app
from chatplatform import audit, db
from chatplatform.api.errors import ApiError, Code, InvalidRequest, NotFound
from tools.models import ToolDefinition

# SPEC.md Limits: test agents and tools (`testType: mock`) are deleted after one day.
MOCK_RECORD_LIFETIME = timedelta(days=1)


def user_get_or_create(*, user_id: str) -> ChatUser:
    user, _ = ChatUser.objects.get_or_create(user_id=user_id, defaults={"password": "!"})
    return user


def prefs_update(*, user_id: str, prefs: dict[str, Any], partial: bool) -> dict[str, Any]:
    """Replace the prefs, or with `partial` merge them in; a key set to null is removed (CONTRACT §5)."""
    with transaction.atomic():
        user, _ = ChatUser.objects.select_for_update().get_or_create(user_id=user_id, defaults={"password": "!"})
        merged = {**user.prefs, **prefs} if partial else dict(prefs)
        user.prefs = {key: value for key, value in merged.items() if value is not None}
        user.save(update_fields=["prefs", "last_update"])
    return user.prefs


def _lock_chat_app(chat_app_id: str) -> ChatApp | None:
    """The stored chat app, locked until the transaction ends; None when it does not exist yet."""
    return ChatApp.objects.select_for_update().filter(chat_app_id=chat_app_id).first()


def _chat_app_write(existing: ChatApp | None, data: dict[str, Any], *, user_id: str) -> ChatApp:
    try:
        fields = validate_chat_app(data, existing=existing)
    except serializers.ValidationError as exc:
        if exc.get_codes() == {"agentId": [AGENT_NOT_FOUND]}:
            # Sound in itself, naming an agent that is not there: INVALID_AGENT_ID (SPEC.md), 404 as elsewhere.
            raise NotFound(f"chatApp.agentId: {exc.detail['agentId'][0]}", code=Code.INVALID_AGENT_ID) from None
        raise serializers.ValidationError({"chatApp": exc.detail})
    if existing is None:
        app = ChatApp(**fields)
        app.save(force_insert=True)
        audit.record(actor=user_id, instance=app, before=None, after=audit.snapshot(app))
        return app
    changed = [name for name, value in fields.items() if getattr(existing, name) != value]
    if changed:  # an update that changes nothing leaves lastUpdate alone
        before = audit.snapshot(existing)
        for name in changed:
            setattr(existing, name, fields[name])
        existing.save()
        audit.record(actor=user_id, instance=existing, before=before, after=audit.snapshot(existing))
    return existing


def chat_app_upsert(*, data: dict[str, Any], user_id: str) -> ChatApp:
    """Create the chat app when `chatAppId` is new; otherwise change only the given fields.

    Raises ValidationError naming `chatApp.<field>` (400), and writes nothing then.
    """
    chat_app_id = data.get("chatAppId")
    if chat_app_id is None or not isinstance(chat_app_id, str):
        # The row lock needs the id before the serializer runs, so this one rule is checked here.
        rule = "is required" if chat_app_id is None else "must be a string"
        raise serializers.ValidationError({"chatApp": {"chatAppId": [rule]}})
    try:
        with transaction.atomic():
            return _chat_app_write(_lock_chat_app(chat_app_id), data, user_id=user_id)
    except IntegrityError:
        # Two creates of one new chatAppId raced and the other insert won: apply this one as an update.
        pass
    with transaction.atomic():
        return _chat_app_write(_lock_chat_app(chat_app_id), data, user_id=user_id)


def chat_app_delete(*, chat_app_id: str, user_id: str) -> None:
    with transaction.atomic():
        app = _lock_chat_app(chat_app_id)
        if app is not None:
            audit.record(actor=user_id, instance=app, before=audit.snapshot(app), after=None)
            app.delete()
    if app is None:
        raise NotFound(f"chat app {chat_app_id} not found", code=Code.INVALID_CHAT_APP_ID)


def mock_records_cleanup(*, older_than: timedelta = MOCK_RECORD_LIFETIME, dry_run: bool = False) -> dict[str, list[str]]:
    """Delete `testType: mock` chat apps, agents and tools created more than `older_than` ago.

    Chat apps go first: they hold their agent (PROTECT). A mock agent still used by a chat app
    that is not deleted with it is kept, and a later run takes it once that app is gone.
    Returns the ids deleted (with `dry_run`, the ids that would be) per kind.
    """
    cutoff = timezone.now() - older_than
    with transaction.atomic():
        app_ids = list(ChatApp.objects.filter(test_type=TestType.MOCK, create_date__lt=cutoff).values_list("chat_app_id", flat=True))
        kept_apps = ChatApp.objects.exclude(chat_app_id__in=app_ids)
        agent_ids = list(
            AgentDefinition.objects.filter(test_type=TestType.MOCK, created_at__lt=cutoff)
            .exclude(agent_id__in=kept_apps.values("agent_id"))
            .values_list("agent_id", flat=True)
        )
        tool_ids = list(ToolDefinition.objects.filter(test_type=TestType.MOCK, created_at__lt=cutoff).values_list("tool_id", flat=True))
        if not dry_run:
            ChatApp.objects.filter(chat_app_id__in=app_ids).delete()
            AgentDefinition.objects.filter(agent_id__in=agent_ids).delete()
            ToolDefinition.objects.filter(tool_id__in=tool_ids).delete()
    return {"chatApps": sorted(app_ids), "agents": sorted(agent_ids), "tools": sorted(tool_ids)}


# --- Turns: the per-session ticket lock, messages and totals (chat.turn) -------------------------
#
# Turns on one session run one at a time, in arrival order, across processes: each arriving turn
# takes a ticket (`turn_next`, incremented under the session's row lock) and runs when
# `turn_serving` reaches it; finishing (or failing) moves `turn_serving` on. The row lock is held
# only for these short claims, never across a model call. A running turn renews its lease
# (`turn_renew`) every TURN_LEASE / 3; a ticket whose turn died with its process (or lost its
# database) is skipped once its lease has run out.

TURN_LEASE = timedelta(seconds=30)
HISTORY_LIMIT = 100  # earlier messages a turn sends to the model (the newest ones)


@dataclass(frozen=True)
class TurnClaim:
    """A turn's place on its session; `user_message` and `history` are set once it may run."""

    session_id: uuid.UUID
    user_id: str
    title: str  # the session's title when the turn was claimed ("" when untitled)
    ticket: int
    created: bool
    user_message: ChatMessage | None = None
    history: list[tuple[str, str]] = field(default_factory=list)  # (source, text), oldest first


def _user_message(session_id: uuid.UUID, *, user_id: str, message: str, files: list[Any], now: datetime) -> ChatMessage:
    return ChatMessage(session_id=session_id, user_id=user_id, source=MessageSource.USER, message=message, files=files, timestamp=now)


def _history(session_id: uuid.UUID, *, before: ChatMessage) -> list[tuple[str, str]]:
    """The session's messages the turn of `before` (its user message, already stored) follows: the
    newest HISTORY_LIMIT, oldest first."""
    connection = connections["default"]
    field = ChatMessage._meta.get_field
    params = [field("session").get_db_prep_value(session_id, connection), field("message_id").get_db_prep_value(before.pk, connection)]
    with connection.cursor() as cursor:
        cursor.execute(_history_sql(connection.vendor), params)
        history = cursor.fetchall()
    history.reverse()
    return history


@functools.cache
def _history_sql(vendor: str) -> str:
    """`_history`'s query, written out once: every turn on a session runs it (docs/decisions.md)."""
    table, column = db.sql_names(ChatMessage)
    return (
        f"SELECT {column('source')}, {column('message')} FROM {table} "
        f"WHERE {column('session')} = %s AND {column('message_id')} <> %s ORDER BY {column('timestamp')} DESC LIMIT {HISTORY_LIMIT}"
    )


@functools.cache
def _take_ticket_sql(vendor: str) -> str:
    """The session's next ticket, under its row lock: (ticket, served at once, title), no row for a
    session that is unknown, another user's or another chat app's. Written out once, like
    `_finish_session_sql`. RETURNING sees the row as updated; SET reads it as it was.
    A message arriving makes the session active again (a completed one reopens, CONTRACT §5) and
    moves its lastUpdate, the clock of the idle-session completion."""
    table, column = db.sql_names(ChatSession)
    next_, serving, started = column("turn_next"), column("turn_serving"), column("turn_started")
    return (
        f"UPDATE {table} SET {next_} = {next_} + 1, "
        f"{started} = CASE WHEN {next_} = {serving} THEN %s ELSE {started} END, "
        f"{column('status')} = '{SessionStatus.ACTIVE.value}', {column('last_update')} = %s "
        f"WHERE {column('session_id')} = %s AND {column('user')} = %s AND {column('chat_app_id')} = %s "
        f"RETURNING {next_} - 1 AS ticket, {next_} - 1 = {serving} AS served, {column('title')} AS title"
    )


def _take_ticket(session_id: uuid.UUID, *, user_id: str, chat_app_id: str, user_message: ChatMessage) -> tuple[int, bool, str] | None:
    """Take the session's next ticket and, when it is served at once, store the user message: all or
    nothing, in one statement on PostgreSQL (the INSERT a CTE that runs only when served)."""
    connection = connections["default"]
    field = ChatSession._meta.get_field
    claim_sql = _take_ticket_sql(connection.vendor)
    moment = field("turn_started").get_db_prep_value(user_message.timestamp, connection)
    params = [
        moment,
        moment,
        field("session_id").get_db_prep_value(session_id, connection),
        user_id,
        chat_app_id,
    ]
    if connection.vendor == "postgresql":
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
) -> TurnClaim:
    """Take a ticket on the session (creating the session when `session_id` is None).

    When the ticket is served at once (the usual case) the user message is stored with it. 404
    INVALID_SESSION_ID for a session that is unknown, another user's or another chat app's
    (CONTRACT §3, §5).
    """
    now = timezone.now()
    if session_id is None:
        session = ChatSession(
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
        user_message = _user_message(session.pk, user_id=user.pk, message=message, files=files, now=now)
        # The session.created outbox rows go in with the session, in the same statement (CONTRACT §9).
        events = webhooks.outbox(WebhookEvent.SESSION_CREATED, session_id=session.pk, user_id=user.pk, chat_app_id=chat_app_id, at=now)
        db.write(session, user_message, *events)
        return TurnClaim(session.pk, user.pk, "", 0, True, user_message)
    user_message = _user_message(session_id, user_id=user.pk, message=message, files=files, now=now)
    taken = _take_ticket(session_id, user_id=user.pk, chat_app_id=chat_app_id, user_message=user_message)
    if taken is None:
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID)
    ticket, served, title = taken
    if not served:
        return TurnClaim(session_id, user.pk, title, ticket, False)
    # A statement of its own, after the ticket: it sees the answer of the turn served before this one
    # even when that turn committed while this one waited for the row lock.
    return TurnClaim(session_id, user.pk, title, ticket, False, user_message, _history(session_id, before=user_message))


def turn_try_start(*, claim: TurnClaim, message: str, files: list[Any]) -> TurnClaim | None:
    """The claim with its user message stored when its ticket is served now; None to wait more."""
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
        user_message = _user_message(session.pk, user_id=claim.user_id, message=message, files=files, now=now)
        db.write(user_message)
        history = _history(session.pk, before=user_message)
    return TurnClaim(session.pk, claim.user_id, session.title, claim.ticket, claim.created, user_message, history)


def turn_release(*, session_id: uuid.UUID, ticket: int) -> None:
    """Hand the session to the next ticket without an answer (the turn failed before its answer)."""
    ChatSession.objects.filter(pk=session_id, turn_serving=ticket).update(turn_serving=ticket + 1, turn_started=timezone.now())


def turn_renew(*, session_id: uuid.UUID, ticket: int) -> None:
    """The turn holding the session is still at it: its lease starts again."""
    ChatSession.objects.filter(pk=session_id, turn_serving=ticket).update(turn_started=timezone.now())


def turn_finish(
    *,
    answer_id: uuid.UUID,
    session_id: uuid.UUID,
    ticket: int,
    user_id: str,
    text: str,
    model: str,
    usage: dict[str, Any],
    traces: list[dict[str, Any]],
    verifications: list[dict[str, Any]],
    execution_duration: int,
    title: str | None = None,
    error: dict[str, str] | None = None,
    citations: list[dict[str, Any]] | None = None,
) -> tuple[ChatMessage, bool]:
    """Store the answer (`error` when it failed midway: the text is what was streamed), add its
    usage to the session's totals, hand the session to the next ticket and, given a `title`,
    title a still untitled session: one transaction. (answer, titled)."""
    now = timezone.now()
    answer = ChatMessage(
        message_id=answer_id,
        session_id=session_id,
        user_id=user_id,
        source=MessageSource.ASSISTANT,
        message=text,
        model=model,
        usage=usage,
        traces=traces,
        verifications=verifications,
        execution_duration=execution_duration,
        error=error,
        citations=citations,
        timestamp=now,
    )
    connection = connections["default"]
    field = ChatSession._meta.get_field
    uuid_value, moment = field("session_id").get_db_prep_value, field("last_update").get_db_prep_value
    params = [usage[key] for _, key in _TOTALS]
    params += [uuid_value(answer.pk, connection), moment(now, connection)]
    params += [ticket, ticket + 1, ticket, moment(now, connection), (title or "")[:200], uuid_value(session_id, connection)]
    # The answer's INSERT and the session's UPDATE: one round trip on PostgreSQL.
    row = db.write(answer, then=_finish_session_sql(connection.vendor), params=params)
    return answer, bool(title) and row is not None and row[0] == title


# A session's totals and the ChatMessageUsage field each one adds up.
_TOTALS = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("total_tokens", "totalTokens"),
    ("input_cost", "inputCost"),
    ("output_cost", "outputCost"),
    ("total_cost", "totalCost"),
)


@functools.cache
def _finish_session_sql(vendor: str) -> str:
    """The session's side of a finished turn as one UPDATE, written out once from the model's own
    table and column names: every turn runs it, and compiling it through F()/Case() each time cost
    a noticeable share of a turn (docs/decisions.md). The expressions read the row as it was before
    the UPDATE (SQL's rule, PostgreSQL's and SQLite's)."""
    table, column = db.sql_names(ChatSession)

    serving, started, title = column("turn_serving"), column("turn_started"), column("title")
    assignments = [f"{column(name)} = {column(name)} + %s" for name, _ in _TOTALS]
    assignments += [
        f"{column('last_message_id')} = %s",
        f"{column('last_update')} = %s",
        # Hand the session on, unless the lease ran out and a later ticket took it over.
        f"{serving} = CASE WHEN {serving} = %s THEN %s ELSE {serving} END",
        f"{started} = CASE WHEN {serving} = %s THEN %s ELSE {started} END",
        # A title the user set meanwhile wins.
        f"{title} = CASE WHEN {title} = '' THEN %s ELSE {title} END",
    ]
    return f"UPDATE {table} SET {', '.join(assignments)} WHERE {column('session_id')} = %s RETURNING {title}"


def session_add_usage(*, session_id: uuid.UUID, usage: dict[str, Any]) -> None:
    """Count a side call made outside a turn's message (the title) in the session's totals."""
    ChatSession.objects.filter(pk=session_id).update(**_usage_increments(usage))


def _usage_increments(usage: dict[str, Any]) -> dict[str, Any]:
    """A ChatMessageUsage added to a session's totals atomically (F(): no read-modify-write race)."""
    return {name: F(name) + usage[key] for name, key in _TOTALS}


def session_set_title(*, session_id: uuid.UUID, title: str, only_if_untitled: bool = False) -> bool:
    """Set the title; with `only_if_untitled` a title set meanwhile (by the user) wins. True when written."""
    sessions = ChatSession.objects.filter(pk=session_id)
    if only_if_untitled:
        sessions = sessions.filter(title="")
    return sessions.update(title=title[:200], last_update=timezone.now()) == 1


# --- Feedback (CONTRACT §5) ---------------------------------------------------------------------

# The author of the feedback the insights analysis creates (CONTRACT §5).
AI_FEEDBACK_USER = "ai-feedback-user"


def _write_comments(feedback: ChatSessionFeedback, comments: list[dict[str, Any]], *, acting_user_id: str) -> None:
    """Make `comments` the feedback's internal comments, in order. A comment naming the commentId of
    one it has keeps its id, author and date; any other is new, by `acting_user_id`, now (authors
    and dates are the service's stamps, not the client's)."""
    existing = {comment.comment_id: comment for comment in feedback.internal_comments.all()}
    now = timezone.now()
    rows = []
    for position, item in enumerate(comments):
        kept = existing.get(item.get("commentId") or "")
        rows.append(
            FeedbackComment(
                comment_id=kept.comment_id if kept else str(uuid.uuid4()),
                feedback=feedback,
                position=position,
                user_id=kept.user_id if kept else acting_user_id,
                comment=item["comment"],
                created_on=kept.created_on if kept else now,
                type=item.get("type") or (kept.type if kept else "comment"),
                status=item.get("status") or (kept.status if kept else "open"),
            )
        )
    FeedbackComment.objects.filter(feedback=feedback).delete()
    FeedbackComment.objects.bulk_create(rows)


def feedback_create(
    *,
    session: ChatSession,
    feedback_id: str | None,
    message_id: str | None,
    type: str,
    user_comment: str,
    severity: str | None,
    status: str,
    internal_comments: list[dict[str, Any]],
    created_by_customer: bool,
    reported_by_human: bool = True,
    user_id: str | None = None,
    acting_user_id: str = "",
) -> ChatSessionFeedback:
    """A new feedback record (by the session's user unless `user_id` says otherwise) and its
    feedback.created event, in one transaction; a client-chosen `feedback_id` already taken is 400."""
    fields: dict[str, Any] = {
        "session": session,
        "user_id": user_id or session.user_id,
        "message_id": message_id,
        "type": type,
        "user_comment": user_comment,
        "severity": severity,
        "status": status,
        "created_by_customer": created_by_customer,
        "reported_by_human": reported_by_human,
    }
    if feedback_id:
        fields["feedback_id"] = feedback_id
    feedback = ChatSessionFeedback(**fields)
    try:
        with transaction.atomic():
            feedback.save(force_insert=True)
            if internal_comments:
                _write_comments(feedback, internal_comments, acting_user_id=acting_user_id)
            webhooks.record(WebhookEvent.FEEDBACK_CREATED, session_id=session.pk, user_id=session.user_id, chat_app_id=session.chat_app_id)
    except IntegrityError:
        raise InvalidRequest(f"feedback {feedback_id} already exists; choose another id or leave it out", field="feedback.feedbackId")
    return feedback


# CONTRACT §5: what an update may change.
FEEDBACK_UPDATABLE = frozenset({"status", "severity", "type", "user_comment"})


def feedback_update(
    *, feedback_id: str, changes: dict[str, Any], internal_comments: list[dict[str, Any]] | None = None, acting_user_id: str = ""
) -> ChatSessionFeedback:
    """Change status, severity, type, user comment and (given) the internal comments of a feedback
    record, nothing else (CONTRACT §5); 404 NOT_FOUND when absent."""
    unknown = set(changes) - FEEDBACK_UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    with transaction.atomic():
        feedback = ChatSessionFeedback.objects.select_for_update().filter(pk=feedback_id).first()
        if feedback is None:
            raise NotFound(f"feedback {feedback_id} not found")
        for name, value in changes.items():
            setattr(feedback, name, value)
        if internal_comments is not None:
            _write_comments(feedback, internal_comments, acting_user_id=acting_user_id)
        feedback.updated_on = timezone.now()
        feedback.save()
    return feedback


# --- Files attached to messages (issue 21) ----------------------------------------------------------


def _file_name(name: str) -> str:
    """The name a browser gave, without any path, control characters or excess length."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(ch for ch in base if ch.isprintable()).strip()
    return cleaned[-255:] or "file"


def file_store(*, user: ChatUser, chat_app_id: str, upload: UploadedFile) -> ChatFile:
    """Store a file `user` uploads to attach to a message in `chat_app_id`.

    404/403 as converse for the chat app; 400 when its fileUpload feature is off, the type is not
    in its `mimeTypesAllowed`, or the bytes do not match the type; 413 beyond CHAT_UPLOAD_MAX_BYTES.
    The bytes are written first and removed again if the record cannot be, so nothing half-stored stays.
    """
    app = selectors.chat_app_for_use(chat_app_id=chat_app_id, user=user)
    enabled, allowed = chat_files.file_upload_settings(selectors.chat_app_features(app))
    if not enabled:
        raise InvalidRequest(f"file upload is not enabled in chat app {app.pk}", field="chatAppId")
    limit = settings.CHAT_UPLOAD_MAX_BYTES
    if upload.size is not None and upload.size > limit:
        raise ApiError(f"file: must be at most {_size_text(limit)} (this one is {_size_text(upload.size)})", status_code=413)
    name = _file_name(upload.name or "")
    mime_type = chat_files.mime_type_of(upload.content_type, name)
    if not chat_files.is_allowed(mime_type, allowed):
        raise InvalidRequest(f"{mime_type} files are not allowed in this chat app (allowed: {', '.join(allowed)})", field="file")
    content = upload.read()
    try:
        chat_files.check_content(mime_type, content)
    except chat_files.FileRefused as exc:
        raise InvalidRequest(str(exc), field="file") from None
    file_id = uuid.uuid4()
    storage = storages["chat_files"]
    stored_as = storage.save(file_id.hex, ContentFile(content))
    try:
        return ChatFile.objects.create(
            file_id=file_id, user=user, chat_app_id=app.pk, name=name, mime_type=mime_type, size=len(content), storage_name=stored_as
        )
    except Exception:
        storage.delete(stored_as)
        raise


def _size_text(size: int) -> str:
    for unit, factor in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"
