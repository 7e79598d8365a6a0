"""Session completion (docs/api.md, "Sessions"): an active session without a message for
CHAT_SESSION_IDLE_MINUTES becomes `completed`, with its `session.completed` webhook rows and, where
its chat app has insights on, its analysis marked due, in one transaction. A later turn reopens it
(chat.services: the ticket's claim sets it `active`)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from chat.insights import analysis as insights
from chat.sessions.models import ChatSession, SessionStatus
from chat.turn.lock import TURN_LEASE
from chat.webhooks import delivery as webhooks
from chat.webhooks.models import WebhookDelivery, WebhookEvent

COMPLETION_BATCH = 500


def sessions_complete_idle() -> tuple[int, list[uuid.UUID]]:
    """Complete the active sessions without a message for CHAT_SESSION_IDLE_MINUTES: each one's
    session.completed outbox rows and, where its chat app has insights on, its analysis marked due,
    in the transaction that completes it. (sessions completed, sessions due for analysis)

    A session with a turn under way is left alone (its lastUpdate moved when the turn claimed it,
    unless the turn outlived its lease). Index chatsession_active_idle."""
    now = timezone.now()
    cutoff = now - timedelta(minutes=settings.CHAT_SESSION_IDLE_MINUTES)
    completed, due = 0, []
    while True:
        with transaction.atomic():
            idle = ChatSession.objects.filter(status=SessionStatus.ACTIVE, last_update__lt=cutoff).filter(
                Q(turn_serving__gte=F("turn_next")) | Q(turn_started__lt=now - TURN_LEASE)
            )
            if connections["default"].vendor == "postgresql":
                idle = idle.select_for_update(skip_locked=True)  # a second run (a retry, a slow worker) takes other rows
            sessions = list(idle.order_by("last_update").only("session_id", "user_id", "chat_app_id", "last_message_id")[:COMPLETION_BATCH])
            if not sessions:
                break
            ChatSession.objects.filter(pk__in=[session.pk for session in sessions]).update(status=SessionStatus.COMPLETED)
            events = [
                row
                for session in sessions
                for row in webhooks.outbox(
                    WebhookEvent.SESSION_COMPLETED, session_id=session.pk, user_id=session.user_id, chat_app_id=session.chat_app_id, at=now
                )
            ]
            WebhookDelivery.objects.bulk_create(events)
            due += insights.mark_due(sessions, now=now)
        completed += len(sessions)
        if len(sessions) < COMPLETION_BATCH:
            break
    return completed, due
