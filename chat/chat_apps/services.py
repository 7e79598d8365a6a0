"""Writes on chat apps, shared by the Admin API and the Django admin; and the daily cleanup of test records."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import serializers

from agents.models import AgentDefinition, TestType
from chat.chat_apps.models import ChatApp
from chat.chat_apps.serializers import AGENT_NOT_FOUND, validate_chat_app
from chatplatform import audit
from chatplatform.api.errors import Code, NotFound
from tools.models import ToolDefinition

# docs/api.md, "Limits": test agents and tools (`testType: mock`) are deleted after one day.
MOCK_RECORD_LIFETIME = timedelta(days=1)


def _lock_chat_app(chat_app_id: str) -> ChatApp | None:
    """The stored chat app, locked until the transaction ends; None when it does not exist yet."""
    return ChatApp.objects.select_for_update().filter(chat_app_id=chat_app_id).first()


def _chat_app_write(existing: ChatApp | None, data: dict[str, Any], *, user_id: str) -> ChatApp:
    try:
        fields = validate_chat_app(data, existing=existing)
    except serializers.ValidationError as exc:
        if exc.get_codes() == {"agentId": [AGENT_NOT_FOUND]}:
            # Sound in itself, naming an agent that is not there: INVALID_AGENT_ID, 404 as elsewhere.
            # The codes above give the detail's shape: {"agentId": [the one error]}.
            raise NotFound(f"chatApp.agentId: {exc.detail['agentId'][0]}", code=Code.INVALID_AGENT_ID) from None  # type: ignore[index, call-overload]
        raise serializers.ValidationError({"chatApp": exc.detail})
    if existing is None:
        app = ChatApp(**fields)
        app.save(force_insert=True)
        audit.record(actor=user_id, instance=app, before=None, after=audit.snapshot(app))
        return app
    changed = [name for name, value in fields.items() if getattr(existing, name) != value]
    if changed:  # an update that changes nothing leaves lastUpdate alone
        before = audit.snapshot(existing)
        for name in changed:
            setattr(existing, name, fields[name])
        existing.save()
        audit.record(actor=user_id, instance=existing, before=before, after=audit.snapshot(existing))
    return existing


def chat_app_upsert(*, data: dict[str, Any], user_id: str) -> ChatApp:
    """Create the chat app when `chatAppId` is new; otherwise change only the given fields.

    Raises ValidationError naming `chatApp.<field>` (400), and writes nothing then.
    """
    chat_app_id = data.get("chatAppId")
    if chat_app_id is None or not isinstance(chat_app_id, str):
        # The row lock needs the id before the serializer runs, so this one rule is checked here.
        rule = "is required" if chat_app_id is None else "must be a string"
        raise serializers.ValidationError({"chatApp": {"chatAppId": [rule]}})
    try:
        with transaction.atomic():
            return _chat_app_write(_lock_chat_app(chat_app_id), data, user_id=user_id)
    except IntegrityError:
        # Two creates of one new chatAppId raced and the other insert won: apply this one as an update.
        pass
    with transaction.atomic():
        return _chat_app_write(_lock_chat_app(chat_app_id), data, user_id=user_id)


def chat_app_delete(*, chat_app_id: str, user_id: str) -> None:
    with transaction.atomic():
        app = _lock_chat_app(chat_app_id)
        if app is not None:
            audit.record(actor=user_id, instance=app, before=audit.snapshot(app), after=None)
            app.delete()
    if app is None:
        raise NotFound(f"chat app {chat_app_id} not found", code=Code.INVALID_CHAT_APP_ID)


def mock_records_cleanup(*, older_than: timedelta = MOCK_RECORD_LIFETIME, dry_run: bool = False) -> dict[str, list[str]]:
    """Delete `testType: mock` chat apps, agents and tools created more than `older_than` ago.

    Chat apps go first: they hold their agent (PROTECT). A mock agent still used by a chat app
    that is not deleted with it is kept, and a later run takes it once that app is gone.
    Returns the ids deleted (with `dry_run`, the ids that would be) per kind.
    """
    cutoff = timezone.now() - older_than
    with transaction.atomic():
        app_ids = list(ChatApp.objects.filter(test_type=TestType.MOCK, create_date__lt=cutoff).values_list("chat_app_id", flat=True))
        kept_apps = ChatApp.objects.exclude(chat_app_id__in=app_ids)
        agent_ids = list(
            AgentDefinition.objects.filter(test_type=TestType.MOCK, created_at__lt=cutoff)
            .exclude(agent_id__in=kept_apps.values("agent_id"))
            .values_list("agent_id", flat=True)
        )
        tool_ids = list(ToolDefinition.objects.filter(test_type=TestType.MOCK, created_at__lt=cutoff).values_list("tool_id", flat=True))
        if not dry_run:
            ChatApp.objects.filter(chat_app_id__in=app_ids).delete()
            AgentDefinition.objects.filter(agent_id__in=agent_ids).delete()
            ToolDefinition.objects.filter(tool_id__in=tool_ids).delete()
    return {"chatApps": sorted(app_ids), "agents": sorted(agent_ids), "tools": sorted(tool_ids)}
