"""Reads on feedback."""

from __future__ import annotations

from chat.feedback.models import ChatSessionFeedback
from chat.sessions.models import ChatSession


def session_feedback(*, session: ChatSession) -> list[ChatSessionFeedback]:
    """A session's feedback, newest first, with its internal comments (index feedback_session_created)."""
    return list(ChatSessionFeedback.objects.filter(session=session).prefetch_related("internal_comments").order_by("-created_on"))
