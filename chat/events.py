"""Where the service's webhook events leave a write (SPEC.md "Webhooks", CONTRACT §9).

`emit` is the one hook: the writes that create a session or feedback call it after their
transaction commits. It only logs for now; the webhooks issue replaces its body with the
delivery (a queued, signed, retried POST per subscribed `CHAT_WEBHOOKS` entry).
"""

from __future__ import annotations

import logging
from typing import Literal

from django.db import transaction

logger = logging.getLogger("chat.events")

Event = Literal["session.created", "session.completed", "feedback.created", "insight.generated"]


def emit(event: Event, *, session_id: str, user_id: str, chat_app_id: str) -> None:
    """Announce `event` (SPEC.md payload data: sessionId, userId, chatAppId)."""
    logger.info("event %s session=%s user=%s chatApp=%s", event, session_id, user_id, chat_app_id)


def emit_on_commit(event: Event, *, session_id: str, user_id: str, chat_app_id: str) -> None:
    """`emit` once the current transaction commits (at once outside one); never for a rolled-back write."""
    transaction.on_commit(lambda: emit(event, session_id=session_id, user_id=user_id, chat_app_id=chat_app_id))
