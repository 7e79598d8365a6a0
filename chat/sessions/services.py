"""Writes on sessions outside a turn: titles, and the usage of side calls."""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import F
from django.utils import timezone

from chat.sessions.models import ChatSession

# A session's totals and the ChatMessageUsage field each one adds up.
SESSION_TOTALS = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("total_tokens", "totalTokens"),
    ("input_cost", "inputCost"),
    ("output_cost", "outputCost"),
    ("total_cost", "totalCost"),
)


def session_add_usage(*, session_id: uuid.UUID, usage: dict[str, Any]) -> None:
    """Count a side call made outside a turn's message (the title) in the session's totals."""
    ChatSession.objects.filter(pk=session_id).update(**usage_increments(usage))


def usage_increments(usage: dict[str, Any]) -> dict[str, Any]:
    """A ChatMessageUsage added to a session's totals atomically (F(): no read-modify-write race)."""
    return {name: F(name) + usage[key] for name, key in SESSION_TOTALS}


def session_set_title(*, session_id: uuid.UUID, title: str, only_if_untitled: bool = False) -> bool:
    """Set the title; with `only_if_untitled` a title set meanwhile (by the user) wins. True when written."""
    sessions = ChatSession.objects.filter(pk=session_id)
    if only_if_untitled:
        sessions = sessions.filter(title="")
    return sessions.update(title=title[:200], last_update=timezone.now()) == 1


def session_pin(*, session_id: uuid.UUID, pinned: bool) -> None:
    """Pin or unpin (docs/api.md, "Pins"); pinning a pinned session keeps its first pin time."""
    sessions = ChatSession.objects.filter(pk=session_id)
    if pinned:
        sessions.filter(pinned_at__isnull=True).update(pinned_at=timezone.now())
    else:
        sessions.update(pinned_at=None)
