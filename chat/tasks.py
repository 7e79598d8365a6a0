"""The chat app's background work (chatplatform.tasks): periodic jobs, the insights analysis and,
by importing chat.webhooks, the webhook deliveries."""

from __future__ import annotations

import uuid
from typing import Any

from asgiref.sync import async_to_sync
from django.utils import timezone

from chat import turn
from chat.approvals.services import approvals_expire
from chat.chat_apps.services import mock_records_cleanup
from chat.governance.services import apply_retention
from chat.insights import analysis as insights
from chat.turn import completion
from chatplatform.tasks import background, periodic


@background()
def analyze_session(session_id: str) -> dict[str, Any]:
    """Analyse a completed session (docs/api.md, "Session insights"), retried on failure."""
    return insights.analyze(session_id=uuid.UUID(session_id))


@periodic("complete_idle_sessions")
def complete_idle_sessions() -> dict[str, int]:
    """Complete idle sessions (docs/api.md, "Sessions") and start the analyses they make due."""
    completed, due = completion.sessions_complete_idle()
    for session_id in due:
        analyze_session.enqueue(str(session_id))
    return {"completed": completed, "analyses": len(due)}


@periodic("recover_stalled_work")
def recover_stalled_work() -> dict[str, int]:
    """Analyses a dead worker or a lost task left behind, started again (at least once)."""
    stalled = insights.stalled(now=timezone.now())
    for session_id in stalled:
        analyze_session.enqueue(str(session_id))
    return {"analyses": len(stalled)}


@periodic("expire_approvals")
def expire_approvals() -> dict[str, int]:
    """Deny the tool calls no person decided in time (docs/api.md, "Approvals"); their turns go on, here."""
    ready = approvals_expire()
    for message_id in ready:
        async_to_sync(_go_on_to_the_end)(message_id)
    return {"turns": len(ready)}


async def _go_on_to_the_end(message_id: uuid.UUID) -> None:
    await turn.go_on(message_id)
    await turn.wait_for_running_turns()


@periodic("cleanup_mock_records")
def cleanup_mock_records() -> dict[str, list[str]]:
    """Delete `testType: mock` chat apps, agents and tools older than one day (docs/api.md, "Limits")."""
    return mock_records_cleanup()


@periodic("apply_retention")
def delete_expired_sessions() -> dict[str, dict[str, int]]:
    """Delete the sessions past their chat app's retention (docs/data.md); the counts per chat app."""
    return apply_retention()
