"""Reading a shared conversation: anyone signed in who holds its link (docs/api.md, "Share links")."""

from __future__ import annotations

from chat.shares.models import SessionShare
from chatplatform.api.errors import NotFound


def share_get(*, share_id: str) -> SessionShare:
    """The share, or 404 NOT_FOUND (a revoked link included)."""
    share = SessionShare.objects.select_related("session").filter(pk=share_id).first()
    if share is None:
        raise NotFound(f"shared conversation {share_id} not found")
    return share
