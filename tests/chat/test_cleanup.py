"""`cleanup_mock_records` (docs/api.md, "Limits"): test records older than a day go, everything else stays."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from agents.models import AgentDefinition
from chat.chat_apps.models import ChatApp
from chat.tasks import cleanup_mock_records
from tools.models import ToolDefinition

pytestmark = pytest.mark.django_db

TWO_DAYS_AGO = timezone.now() - timedelta(days=2)


@pytest.fixture
def records(admin_client):
    """Old and fresh mock records of each kind, plus real ones, created through the Admin API."""
    tool = {
        "executionType": "function",
        "name": "echo",
        "displayName": "Echo",
        "description": "Echoes",
        "supportedAgentFrameworks": ["hosted"],
        "functionArn": "local:echo",
        "functionSchema": [{"name": "echo", "description": "Echo", "parameters": {}}],
    }
    for tool_id, test_type in [("old-mock@1", "mock"), ("new-mock@1", "mock"), ("real@1", None)]:
        body = {**tool, "toolId": tool_id, **({"testType": test_type} if test_type else {})}
        assert admin_client.post("/api/chat-admin/tool", {"tool": body}, format="json").status_code == 200
    for agent_id, test_type in [("old-mock", "mock"), ("new-mock", "mock"), ("real", None), ("old-mock-in-use", "mock")]:
        body = {"agentId": agent_id, "basePrompt": "Hi", "toolIds": [], **({"testType": test_type} if test_type else {})}
        assert admin_client.post("/api/chat-admin/agent", {"agent": body}, format="json").status_code == 200
    for app_id, agent_id, test_type in [
        ("old-mock", "old-mock", "mock"),
        ("new-mock", "new-mock", "mock"),
        ("real", "old-mock-in-use", None),
    ]:
        body = {"chatAppId": app_id, "title": app_id, "agentId": agent_id, **({"testType": test_type} if test_type else {})}
        assert admin_client.post("/api/chat-admin/chat-app", {"chatApp": body}, format="json").status_code == 200
    ToolDefinition.objects.filter(tool_id__in=["old-mock@1", "real@1"]).update(created_at=TWO_DAYS_AGO)
    AgentDefinition.objects.filter(agent_id__in=["old-mock", "real", "old-mock-in-use"]).update(created_at=TWO_DAYS_AGO)
    ChatApp.objects.filter(chat_app_id__in=["old-mock", "real"]).update(create_date=TWO_DAYS_AGO)


def remaining() -> dict[str, set[str]]:
    return {
        "tools": set(ToolDefinition.objects.values_list("tool_id", flat=True)),
        "agents": set(AgentDefinition.objects.values_list("agent_id", flat=True)),
        "chatApps": set(ChatApp.objects.values_list("chat_app_id", flat=True)),
    }


def test_old_mock_records_are_deleted_and_fresh_or_real_ones_kept(records):
    out = StringIO()
    call_command("cleanup_mock_records", stdout=out)
    assert remaining() == {
        "tools": {"new-mock@1", "real@1"},
        # old-mock-in-use is a mock agent still used by a real chat app: kept.
        "agents": {"new-mock", "real", "old-mock-in-use"},
        "chatApps": {"new-mock", "real"},
    }
    assert "deleted chatApp old-mock" in out.getvalue()
    assert "deleted agent old-mock" in out.getvalue()
    assert "deleted tool old-mock@1" in out.getvalue()
    assert out.getvalue().strip().endswith("deleted 3 mock records")


def test_dry_run_prints_what_it_would_delete_and_deletes_nothing(records):
    before = remaining()
    out = StringIO()
    call_command("cleanup_mock_records", "--dry-run", stdout=out)
    assert remaining() == before
    assert "would delete agent old-mock" in out.getvalue()
    assert out.getvalue().strip().endswith("would delete 3 mock records")


@pytest.mark.django_db(transaction=True)  # RQ's worker manages its connections between jobs
def test_cleanup_runs_as_a_background_task_on_the_worker(records):
    result = cleanup_mock_records.enqueue()
    call_command("run_worker", "--burst", stdout=StringIO())
    result.refresh()
    assert result.return_value == {"chatApps": ["old-mock"], "agents": ["old-mock"], "tools": ["old-mock@1"]}
    assert "old-mock" not in remaining()["agents"]
