"""Retention (docs/api.md, "Retention"): each chat app's `retentionDays`, else CHAT_RETENTION_DAYS;
`manage.py apply_retention [--dry-run]` and the worker's job delete expired sessions with what hangs
off them (the files' bytes too), and leave newer sessions and other chat apps' alone."""

from __future__ import annotations

import io
import uuid
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.core.management import call_command
from django.utils import timezone

from chat.files.serializers import ChatMessageFileSerializer
from chat.models import (
    ChatFile,
    ChatMessage,
    ChatSession,
    ChatSessionFeedback,
    ChatUser,
    DeliveryState,
    ToolApproval,
    WebhookDelivery,
)
from chat.tasks import delete_expired_sessions  # the job the worker runs every hour
from chatplatform.models import AuditEntry
from tests.conftest import assert_error
from tests.factories import AgentFactory, ChatAppFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _site_retention(settings) -> None:
    settings.CHAT_RETENTION_DAYS = 365


def a_session(chat_app_id: str, days_old: int, user_id: str = "alice") -> ChatSession:
    """A session last active `days_old` days ago, with a question and an answer naming a stored
    file, feedback, a pending approval and webhook deliveries (one sent, one not)."""
    ChatUser.objects.get_or_create(user_id=user_id)
    then = timezone.now() - timedelta(days=days_old)
    session = ChatSession.objects.create(user_id=user_id, chat_app_id=chat_app_id, agent_id="helper", create_date=then, last_update=then)
    file_id = uuid.uuid4()
    name = storages["chat_files"].save(file_id.hex, ContentFile(b"bytes"))
    file = ChatFile.objects.create(
        file_id=file_id, user_id=user_id, chat_app_id=chat_app_id, name="a.txt", mime_type="text/plain", size=5, storage_name=name
    )
    files = [ChatMessageFileSerializer(file).data]
    ChatMessage.objects.create(session=session, user_id=user_id, source="user", message="hi", files=files, timestamp=then)
    answer = ChatMessage.objects.create(session=session, user_id=user_id, source="assistant", message="hello", timestamp=then)
    ChatSessionFeedback.objects.create(session=session, user_id=user_id, type="user_thumbs_up")
    ToolApproval.objects.create(session=session, message_id=answer.pk, call_id="c", tool_id="t", function="f", expires_at=then)
    for state in (DeliveryState.PENDING, DeliveryState.DELIVERED):
        WebhookDelivery.objects.create(event="session.created", endpoint="http://127.0.0.1:9/", body="", session_id=session.pk, state=state)
    return session


@pytest.fixture
def sessions(db) -> dict[str, ChatSession]:
    agent = AgentFactory(agent_id="helper")
    ChatAppFactory(chat_app_id="short", agent=agent, retention_days=30)
    ChatAppFactory(chat_app_id="site", agent=agent)  # follows CHAT_RETENTION_DAYS
    return {
        "short, expired": a_session("short", 40),
        "short, kept": a_session("short", 10),
        "site, expired": a_session("site", 400),
        "site, kept": a_session("site", 40),  # older than `short`'s 30 days: another app's rule does not reach it
        "deleted app, expired": a_session("gone", 400),
    }


def test_expired_sessions_go_with_their_files_bytes_and_the_rest_stay(sessions, chat_files):
    out = io.StringIO()
    call_command("apply_retention", stdout=out)

    expired = [sessions[name].pk for name in ("short, expired", "site, expired", "deleted app, expired")]
    kept = [sessions[name].pk for name in ("short, kept", "site, kept")]
    assert set(ChatSession.objects.values_list("pk", flat=True)) == set(kept)
    assert not ChatMessage.objects.filter(session_id__in=expired).exists()
    assert set(ChatSessionFeedback.objects.values_list("session_id", flat=True)) == set(kept)
    assert set(ToolApproval.objects.values_list("session_id", flat=True)) == set(kept)
    # Unsent deliveries about them go; the log of those sent stays (it ages out on its own).
    assert not WebhookDelivery.objects.filter(session_id__in=expired, state=DeliveryState.PENDING).exists()
    assert WebhookDelivery.objects.filter(session_id__in=expired, state=DeliveryState.DELIVERED).count() == 3
    assert ChatFile.objects.count() == 2 and len(list(chat_files.iterdir())) == 2  # records and bytes of the kept sessions only
    assert set(ChatFile.objects.values_list("chat_app_id", flat=True)) == {"short", "site"}
    lines = out.getvalue().splitlines()
    assert lines == [
        "gone: deleted 1 sessions, 2 messages, 1 files, 1 feedback, 0 insights, 1 approvals, 1 webhookDeliveries",
        "short: deleted 1 sessions, 2 messages, 1 files, 1 feedback, 0 insights, 1 approvals, 1 webhookDeliveries",
        "site: deleted 1 sessions, 2 messages, 1 files, 1 feedback, 0 insights, 1 approvals, 1 webhookDeliveries",
        "deleted 3 sessions",
    ]
    entry = AuditEntry.objects.get(object_type="expired sessions")
    assert entry.actor == "retention" and entry.changes["short"]["before"]["sessions"] == 1


def test_a_dry_run_deletes_nothing_and_prints_the_counts_the_run_then_deletes(sessions, chat_files):
    dry, real = io.StringIO(), io.StringIO()
    call_command("apply_retention", "--dry-run", stdout=dry)
    assert ChatSession.objects.count() == 5 and ChatMessage.objects.count() == 10
    assert len(list(chat_files.iterdir())) == 5 and not AuditEntry.objects.filter(object_type="expired sessions").exists()

    call_command("apply_retention", stdout=real)

    assert dry.getvalue().replace("would delete", "deleted") == real.getvalue()
    assert ChatSession.objects.count() == 2


def test_without_any_retention_everything_is_kept(sessions, settings):
    settings.CHAT_RETENTION_DAYS = None
    ChatSession.objects.filter(chat_app_id="short").delete()
    out = io.StringIO()
    call_command("apply_retention", stdout=out)
    assert out.getvalue() == "deleted 0 sessions\n"
    assert ChatSession.objects.count() == 3


def test_retention_days_is_written_and_checked_through_the_admin_api(admin_client):
    AgentFactory(agent_id="helper")
    app = {"chatAppId": "support", "title": "Support", "agentId": "helper", "retentionDays": 90}
    response = admin_client.post("/api/chat-admin/chat-app", {"chatApp": app}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["chatApp"]["retentionDays"] == 90
    cleared = admin_client.post("/api/chat-admin/chat-app", {"chatApp": {"chatAppId": "support", "retentionDays": None}}, format="json")
    assert cleared.json()["chatApp"]["retentionDays"] is None
    for wrong in (0, "soon", 2.5):
        change = {"chatApp": {"chatAppId": "support", "retentionDays": wrong}}
        refused = admin_client.post("/api/chat-admin/chat-app", change, format="json")
        body = assert_error(refused, 400, "INVALID_REQUEST")
        assert "retentionDays" in body["error"], body


def test_the_workers_periodic_job_applies_retention(sessions):
    counts = delete_expired_sessions.func()

    assert {chat_app_id: kinds["sessions"] for chat_app_id, kinds in counts.items()} == {"gone": 1, "short": 1, "site": 1}
    assert ChatSession.objects.count() == 2
