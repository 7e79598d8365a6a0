"""Deleting what the platform keeps about conversations and people (docs/data.md): a conversation
its user deletes, the sessions past their chat app's retention, and everything of a person erased.

Every deletion of sessions goes through `sessions_delete`, so each reaches the same places: the
session's rows (messages, feedback, insights, approvals and paused turns), the files its messages
name and their bytes in the `chat_files` storage (once the delete commits), the webhook deliveries
not yet sent about it, and its kept stream events (`sessions_deleted`, which chat.turn.replay
answers by dropping them from this process and from Redis).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from datetime import datetime, timedelta
from importlib import import_module

from django.conf import settings
from django.contrib.admin.models import LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.dispatch import Signal
from django.utils import timezone

from chat.approvals.models import ApprovalStatus, ToolApproval
from chat.chat_apps.models import ChatApp
from chat.feedback.models import ChatSessionFeedback, FeedbackComment
from chat.files.models import ChatFile
from chat.governance.models import UsageCounter
from chat.insights.models import SessionInsight
from chat.sessions.models import ChatMessage, ChatSession, MessageSource
from chat.users.models import ChatUser
from chat.webhooks.models import DeliveryState, WebhookDelivery
from chat.widgets.models import WidgetData
from chatplatform import audit
from chatplatform.api.errors import NotFound
from chatplatform.models import AuditAction, AuditEntry

# Sent once a deletion of sessions commits, with `session_ids` and `message_ids` (lists of str):
# their kept stream events are dropped by the receiver chat.apps connects (chat.turn.replay).
sessions_deleted = Signal()

RETENTION_BATCH = 200  # sessions per transaction: short ones, so a turn never waits long for a row
RETENTION_ACTOR = "retention"
KEPT_WHILE_PAUSED = 86400  # seconds a paused turn's events outlive CHAT_STREAM_REPLAY_SECONDS (chat.turn.replay)
KINDS = ("sessions", "messages", "files", "feedback", "insights", "approvals", "webhookDeliveries")


def user_hash(user_id: str) -> str:
    """How the audit names an erased user: the SHA-256 of the user id, never the id."""
    return "sha256:" + hashlib.sha256(user_id.encode()).hexdigest()


def _file_ids(messages: QuerySet[ChatMessage]) -> set[uuid.UUID]:
    ids = set()
    for files in messages.exclude(files=[]).values_list("files", flat=True):
        for file in files or []:
            try:
                ids.add(uuid.UUID(str(file.get("fileId"))))
            except (AttributeError, ValueError):
                continue
    return ids


def sessions_delete(*, session_ids: Iterable[uuid.UUID], dry_run: bool = False, every_delivery: bool = False) -> dict[str, int]:
    """Delete sessions with everything that hangs off them, in the caller's transaction (one of its
    own otherwise); the count of each kind deleted (with `dry_run`, that would be, and nothing is).
    `every_delivery`: the webhook deliveries already sent too (an erasure: their bodies name the user)."""
    ids = list(session_ids)
    sessions = ChatSession.objects.filter(pk__in=ids)
    messages = ChatMessage.objects.filter(session_id__in=ids)
    deliveries = WebhookDelivery.objects.filter(session_id__in=ids)
    if not every_delivery:
        deliveries = deliveries.filter(state=DeliveryState.PENDING)
    with transaction.atomic():
        files = ChatFile.objects.filter(file_id__in=_file_ids(messages))
        counts = {
            "sessions": sessions.count(),
            "messages": messages.count(),
            "files": files.count(),
            "feedback": ChatSessionFeedback.objects.filter(session_id__in=ids).count(),
            "insights": SessionInsight.objects.filter(session_id__in=ids).count(),
            "approvals": ToolApproval.objects.filter(session_id__in=ids, status=ApprovalStatus.PENDING).count(),
            "webhookDeliveries": deliveries.count(),
        }
        if dry_run or not counts["sessions"]:
            return counts
        # A turn's events are kept under its answer's id for CHAT_STREAM_REPLAY_SECONDS after it ends:
        # older answers have none left to drop, unless their turn waited for approvals meanwhile.
        kept_since = timezone.now() - timedelta(seconds=settings.CHAT_STREAM_REPLAY_SECONDS + KEPT_WHILE_PAUSED)
        paused = ToolApproval.objects.filter(session_id__in=ids).values("message_id")
        answers = messages.filter(Q(timestamp__gte=kept_since) | Q(pk__in=paused), source=MessageSource.ASSISTANT)
        message_ids = [str(message_id) for message_id in answers.values_list("pk", flat=True)]
        files.delete()  # one by one: each record's bytes go once the transaction commits (chat.files.models)
        deliveries.delete()
        sessions.delete()  # messages, feedback, insights, approvals and paused turns cascade
        session_keys = [str(session_id) for session_id in ids]
        transaction.on_commit(lambda: sessions_deleted.send(ChatSession, session_ids=session_keys, message_ids=message_ids))
    return counts


def session_delete(*, session: ChatSession) -> dict[str, int]:
    """A user deletes one of their conversations (DELETE /api/chat/sessions/{sessionId})."""
    return sessions_delete(session_ids=[session.pk])


# --- Retention ------------------------------------------------------------------------------------


def _expired(now: datetime) -> list[tuple[QuerySet[ChatSession], datetime]]:
    """The expired sessions of each retention rule, with the rule's cutoff: each chat app with its
    own `retentionDays`, then CHAT_RETENTION_DAYS for every other session (deleted apps' included)."""
    own = dict(ChatApp.objects.filter(retention_days__isnull=False).values_list("chat_app_id", "retention_days"))
    rules = []
    for chat_app_id, days in own.items():
        assert days is not None  # retention_days__isnull=False
        cutoff = now - timedelta(days=days)
        rules.append((ChatSession.objects.filter(chat_app_id=chat_app_id, last_update__lt=cutoff), cutoff))
    if settings.CHAT_RETENTION_DAYS:
        cutoff = now - timedelta(days=settings.CHAT_RETENTION_DAYS)
        rules.append((ChatSession.objects.filter(last_update__lt=cutoff).exclude(chat_app_id__in=list(own)), cutoff))
    return rules


def apply_retention(*, dry_run: bool = False, now: datetime | None = None, batch_size: int = RETENTION_BATCH) -> dict[str, dict[str, int]]:
    """Delete every session whose last activity is older than its chat app's retention (docs/data.md),
    in batches of short transactions; the counts per chat app (with `dry_run`, what would go: the
    same walk, counting instead of deleting).

    Each batch re-reads its sessions' expiry under their row locks, skipping a row a turn holds: a
    turn arriving on an old session meanwhile keeps it. One audit entry per run that deleted anything."""
    now = now or timezone.now()
    per_app: dict[str, Counter[str]] = {}
    for expired, cutoff in _expired(now):
        last = None
        while True:
            page = expired.order_by("pk") if last is None else expired.filter(pk__gt=last).order_by("pk")
            ids = list(page.values_list("pk", flat=True)[:batch_size])
            if not ids:
                break
            last = ids[-1]
            began = time.monotonic()
            with transaction.atomic():
                rows = ChatSession.objects.filter(pk__in=ids, last_update__lt=cutoff)
                if not dry_run:
                    rows = rows.select_for_update(skip_locked=True)
                for chat_app_id, session_ids in _by_app(rows.values_list("chat_app_id", "pk")).items():
                    per_app.setdefault(chat_app_id, Counter()).update(sessions_delete(session_ids=session_ids, dry_run=dry_run))
            if len(ids) < batch_size:
                break
            if not dry_run and connection.vendor == "sqlite":
                # A write locks the whole SQLite database: as long a pause as the batch took lets
                # the turns waiting on the lock in (their busy handler polls; PostgreSQL locks rows).
                time.sleep(time.monotonic() - began)
    counts = {chat_app_id: {kind: counter[kind] for kind in KINDS} for chat_app_id, counter in sorted(per_app.items())}
    if counts and not dry_run:
        audit.record_event(
            actor=RETENTION_ACTOR,
            action=AuditAction.DELETE,
            object_type="expired sessions",
            object_id=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            changes={chat_app_id: {"before": kinds, "after": None} for chat_app_id, kinds in counts.items()},
        )
    return counts


def _by_app(rows: Iterable[tuple[str, uuid.UUID]]) -> dict[str, list[uuid.UUID]]:
    grouped: dict[str, list[uuid.UUID]] = {}
    for chat_app_id, session_id in rows:
        grouped.setdefault(chat_app_id, []).append(session_id)
    return grouped


# --- Erasure --------------------------------------------------------------------------------------


def _cookie_sessions(user_id: str) -> list[str]:
    """The keys of the user's live browser sessions (the `session` cookie's store: each decoded)."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    model = store.get_model_class()
    keys = []
    for key, data in model.objects.filter(expire_date__gt=timezone.now()).values_list("session_key", "session_data").iterator():
        if str(store().decode(data).get("_auth_user_id")) == user_id:
            keys.append(key)
    return keys


def erase_user(*, user_id: str, actor: str, dry_run: bool = False) -> dict[str, int]:
    """Delete the user and everything of theirs (docs/data.md, "Where it is, and what reaches it"): their sessions and all
    that goes with them, feedback and comments they wrote elsewhere, prefs, widget data, files,
    usage counters; end their browser sessions; rename them to their hash where an audit entry or
    an approval they decided names them. One audit entry, naming them by hash. 404 when unknown."""
    user = ChatUser.objects.filter(pk=user_id).first()
    if user is None:
        raise NotFound(f"user {user_id} not found")
    hashed = user_hash(user_id)
    with transaction.atomic():
        # What is theirs outside their own sessions, counted before those go (and with them, their part).
        feedback = ChatSessionFeedback.objects.filter(user_id=user_id)
        comments = FeedbackComment.objects.filter(user_id=user_id)
        elsewhere = {
            "feedback": feedback.exclude(session__user_id=user_id).count(),
            "comments": comments.exclude(feedback__session__user_id=user_id).count(),
        }
        files = ChatFile.objects.filter(user_id=user_id)
        widget_data = WidgetData.objects.filter(user_id=user_id)
        counters = UsageCounter.objects.filter(user_id=user_id)
        cookie_sessions = _cookie_sessions(user_id)
        all_files = files.count()
        session_ids = list(ChatSession.objects.filter(user_id=user_id).values_list("pk", flat=True))
        counts = sessions_delete(session_ids=session_ids, dry_run=dry_run, every_delivery=True)
        counts["feedback"] += elsewhere["feedback"]
        counts["files"] = all_files
        counts.update(
            feedbackComments=elsewhere["comments"],
            prefs=1 if user.prefs else 0,
            widgetData=widget_data.count(),
            usageCounters=counters.count(),
            browserSessions=len(cookie_sessions),
            users=1,
        )
        if dry_run:
            return counts
        for records in (feedback, comments, files, widget_data, counters):
            records.delete()
        store = import_module(settings.SESSION_ENGINE).SessionStore
        store.get_model_class().objects.filter(session_key__in=cookie_sessions).delete()
        # Records of others that name the user: kept, naming the hash instead.
        ToolApproval.objects.filter(decided_by=user_id).update(decided_by=hashed)
        AuditEntry.objects.filter(actor=user_id).update(actor=hashed)
        AuditEntry.objects.filter(Q(object_id=user_id) | Q(object_id=f"username {user_id}")).update(object_id=hashed, object_repr=hashed)
        LogEntry.objects.filter(content_type=ContentType.objects.get_for_model(ChatUser), object_id=user_id).delete()
        user.delete()
        audit.record_event(
            actor=actor,
            action=AuditAction.DELETE,
            object_type="erased user",
            object_id=hashed,
            changes={kind: {"before": count, "after": 0} for kind, count in counts.items()},
        )
    return counts
