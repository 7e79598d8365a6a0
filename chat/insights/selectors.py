"""Reads on insights."""

from __future__ import annotations

from chat.insights.models import SessionInsight
from chat.sessions.models import ChatSession


def session_insight(*, session: ChatSession) -> SessionInsight | None:
    """The session's analysis row (its record, and where the analysis stands), if any."""
    return SessionInsight.objects.filter(pk=session.pk).first()
