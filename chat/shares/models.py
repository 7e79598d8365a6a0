"""Read-only share links of a conversation (docs/api.md, "Share links")."""

from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone

from chat.sessions.models import ChatSession


def _share_id() -> str:
    # Anyone signed in who holds the link reads the conversation: the id must not be guessable.
    return secrets.token_urlsafe(16)


class SessionShare(models.Model):
    """A snapshot of a session's conversation, taken when its user shared it. One per session:
    sharing again takes a new snapshot under the same link; revoking deletes it."""

    share_id = models.CharField("shareId", max_length=32, primary_key=True, default=_share_id, editable=False)
    # Deleting the session deletes its share (chat.governance.services.sessions_delete).
    session = models.OneToOneField(ChatSession, on_delete=models.CASCADE, related_name="share")
    title = models.CharField(max_length=200, blank=True, default="")
    chat_app_id = models.CharField("chatAppId", max_length=128)
    agent_id = models.CharField("agentId", max_length=128)
    # The messages as GET /api/chat/shared/{shareId} lists them (SharedMessageSerializer), oldest first.
    messages = models.JSONField(default=list)
    shared_at = models.DateTimeField("sharedAt", default=timezone.now)

    class Meta:
        verbose_name = "shared conversation"

    def __str__(self) -> str:
        return f"{self.share_id} ({self.session_id})"
