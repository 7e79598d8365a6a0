"""Sharing a conversation and revoking the link (docs/api.md, "Share links")."""

from __future__ import annotations

from django.utils import timezone

from chat.sessions.models import ChatSession
from chat.sessions.selectors import session_messages
from chat.shares.models import SessionShare
from chat.shares.serializers import SharedMessageSerializer
from chatplatform.api.errors import NotFound

SHARED_MESSAGES = 1000  # the newest messages a snapshot keeps, as GET .../messages's largest `limit`


def share_snapshot(*, session: ChatSession) -> SessionShare:
    """The session's conversation as it is now, at its share link (the same link when shared before)."""
    messages = SharedMessageSerializer(session_messages(session=session, limit=SHARED_MESSAGES), many=True).data
    fields = {
        "title": session.title,
        "chat_app_id": session.chat_app_id,
        "agent_id": session.agent_id,
        "messages": messages,
        "shared_at": timezone.now(),
    }
    # update_or_create locks the row; two first shares at once meet the one-to-one and make one link.
    share, _ = SessionShare.objects.update_or_create(session=session, defaults=fields)
    return share


def share_revoke(*, session: ChatSession) -> None:
    """The link stops working; 404 when the session has none."""
    deleted, _ = SessionShare.objects.filter(session=session).delete()
    if not deleted:
        raise NotFound(f"session {session.pk} is not shared")
