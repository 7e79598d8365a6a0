"""The Django admin: a chat app's retentionDays, and erasure from the users list (its action and
its delete both erase everything of the user, as the Admin API does: docs/data.md)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from chat.models import ChatApp, ChatMessage, ChatSession, ChatUser, UsageCounter, WidgetData
from chatplatform.models import AuditEntry
from tests.chat_apps.test_admin import ADD_URL, form
from tests.factories import AgentFactory, ChatMessageFactory

pytestmark = pytest.mark.django_db


def a_user_with_a_conversation(user_id: str) -> None:
    ChatUser.objects.create_user(user_id, prefs={"theme": "dark"})
    ChatMessageFactory(session__user_id=user_id)
    WidgetData.objects.create(user_id=user_id, scope="demo", tag="counter", data={"count": 1})


def test_a_chat_apps_retention_is_set_in_its_form_and_checked_as_the_api_checks_it(staff):
    AgentFactory(agent_id="helper")
    assert staff.post(ADD_URL, form(retention_days="45")).status_code == 302
    assert ChatApp.objects.get(pk="support").retention_days == 45

    refused = staff.post("/admin/chat/chatapp/support/change/", form(retention_days="0"))

    assert refused.status_code == 200 and "retentionDays: must be at least 1" in refused.content.decode()
    assert ChatApp.objects.get(pk="support").retention_days == 45


def test_the_erase_action_and_the_delete_button_both_erase_everything_of_the_user(staff):
    for user_id in ("alice", "bob"):
        a_user_with_a_conversation(user_id)

    acted = staff.post("/admin/chat/chatuser/", {"action": "erase_users", "_selected_action": ["alice"]})
    deleted = staff.post("/admin/chat/chatuser/bob/delete/", {"post": "yes"})

    assert acted.status_code == deleted.status_code == 302
    assert not ChatUser.objects.filter(pk__in=["alice", "bob"]).exists()
    assert not ChatSession.objects.exists() and not ChatMessage.objects.exists() and not WidgetData.objects.exists()
    entries = AuditEntry.objects.filter(object_type="erased user", actor="staff")
    assert entries.count() == 2 and all(entry.object_id.startswith("sha256:") for entry in entries)


def test_erase_user_dry_run_counts_and_deletes_nothing_then_erases(db):
    a_user_with_a_conversation("alice")
    out = io.StringIO()
    call_command("erase_user", "alice", "--dry-run", stdout=out)
    assert out.getvalue().startswith("would delete: 1 sessions, 1 messages, 0 files")
    assert "1 widgetData" in out.getvalue() and ChatUser.objects.filter(pk="alice").exists()

    call_command("erase_user", "alice", stdout=io.StringIO())

    assert not ChatUser.objects.filter(pk="alice").exists() and not ChatSession.objects.exists()
    with pytest.raises(CommandError, match="user alice not found"):
        call_command("erase_user", "alice")


def test_operators_read_the_usage_counters_and_cannot_change_them(staff):
    a_user_with_a_conversation("alice")
    UsageCounter.objects.create(user_id="alice", chat_app_id="support", period="day", period_start="2026-11-26", tokens=1234, cost_usd=0.5)

    listed = staff.get("/admin/chat/usagecounter/")

    assert listed.status_code == 200 and "1234" in listed.content.decode()
    assert staff.get("/admin/chat/usagecounter/add/").status_code == 403
