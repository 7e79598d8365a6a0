"""Sessions and their messages (docs/api.md, "Sessions")."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from chat.users.models import ChatUser

# --- Sessions, messages, feedback (docs/api.md, "Sessions") -------------------------------------


class SessionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    COMPLETED = "completed", "Completed"


class InvocationMode(models.TextChoices):
    CHAT_APP = "chat-app", "Chat app"
    DIRECT_AGENT_INVOKE = "direct-agent-invoke", "Direct agent invoke"
    CHAT_APP_COMPONENT = "chat-app-component", "Chat app component"


class TurnSource(models.TextChoices):
    """Who sent a converse request (`source`, docs/api.md "Converse")."""

    USER = "user", "User"
    COMPONENT_AS_USER = "component-as-user", "Component as user"
    COMPONENT = "component", "Component"


class ChatSession(models.Model):
    """One conversation of a user with an agent inside a chat app.

    `chat_app_id` and `agent_id` are plain ids, not foreign keys: a session is history, and
    deleting a chat app or an agent must neither be refused because of it nor erase it.
    Token and cost totals only move through `F()` updates in `chat.services` (two turns, or a
    turn and a title, may finish at once). `turn_next`/`turn_serving`/`turn_started` are the
    per-session ticket lock that runs turns one at a time in arrival order (chat.turnlock).
    """

    session_id = models.UUIDField("sessionId", primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: chatsession_user_created starts with it (one index fewer per turn's insert).
    user = models.ForeignKey(ChatUser, on_delete=models.CASCADE, related_name="chat_sessions", db_index=False)
    chat_app_id = models.CharField("chatAppId", max_length=128)
    agent_id = models.CharField("agentId", max_length=128)
    title = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=10, choices=SessionStatus.choices, default=SessionStatus.ACTIVE)
    invocation_mode = models.CharField(max_length=20, choices=InvocationMode.choices, null=True, blank=True)
    source = models.CharField(max_length=20, choices=TurnSource.choices, default=TurnSource.USER)
    entity_id = models.CharField("entityId", max_length=255, null=True, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    total_tokens = models.BigIntegerField(default=0)
    input_cost = models.FloatField(default=0.0)
    output_cost = models.FloatField(default=0.0)
    total_cost = models.FloatField(default=0.0)
    last_message_id = models.UUIDField("lastMessageId", null=True, blank=True)
    # When its user pinned it (docs/api.md, "Pins"); null: not pinned. Nullable, so adding it rebuilt no table.
    pinned_at = models.DateTimeField(null=True, blank=True)
    turn_next = models.PositiveBigIntegerField(default=0, editable=False)
    turn_serving = models.PositiveBigIntegerField(default=0, editable=False)
    turn_started = models.DateTimeField(null=True, blank=True, editable=False)
    create_date = models.DateTimeField(default=timezone.now, editable=False)
    last_update = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "chat session"
        ordering = ["-create_date"]
        indexes = [
            # GET /api/chat/sessions?userId= (newest first) and session search by userId
            models.Index(fields=["user", "-create_date"], name="chatsession_user_created"),
            # GET /api/chat/sessions?userId=&chatAppId=
            models.Index(fields=["user", "chat_app_id", "-create_date"], name="chatsession_user_app_created"),
            # GET /api/chat/sessions: the pinned ones first (a user pins few, so the index stays small)
            models.Index(fields=["user", "-create_date"], condition=models.Q(pinned_at__isnull=False), name="chatsession_user_pinned"),
            # session search by chatAppId, and the admin's chat app filter
            models.Index(fields=["chat_app_id", "-create_date"], name="chatsession_app_created"),
            # session search without filters / by date only
            models.Index(fields=["-create_date"], name="chatsession_created"),
            # the idle-session completion job: active sessions by last activity
            models.Index(fields=["last_update"], condition=models.Q(status="active"), name="chatsession_active_idle"),
            # retention (chat.governance): a chat app's sessions by last activity
            models.Index(fields=["chat_app_id", "last_update"], name="chatsession_app_updated"),
            # session search: dateFilter `updated` and the sorts of its sortBy
            models.Index(fields=["-last_update", "-session_id"], name="chatsession_updated"),
            models.Index(fields=["-input_tokens", "-session_id"], name="chatsession_input_tokens"),
            models.Index(fields=["-output_tokens", "-session_id"], name="chatsession_output_tokens"),
            models.Index(fields=["-total_cost", "-session_id"], name="chatsession_total_cost"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id} ({self.user_id}, {self.chat_app_id})"


class MessageSource(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"


class ChatMessage(models.Model):
    """One message of a session: the user's, or the agent's answer with its usage and traces.

    `usage` is ChatMessageUsage (tokens and USD cost of every model call of the turn); `traces`
    lists each stage of the turn with its tokens and milliseconds.
    """

    message_id = models.UUIDField("messageId", primary_key=True, default=uuid.uuid4, editable=False)
    # No index of its own: chatmessage_session_time starts with it.
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages", db_index=False)
    user_id = models.CharField("userId", max_length=255)
    source = models.CharField(max_length=10, choices=MessageSource.choices)
    message = models.TextField()
    model = models.CharField(max_length=200, blank=True, default="")
    usage = models.JSONField(null=True, blank=True)
    traces = models.JSONField(default=list, blank=True)
    files = models.JSONField(default=list, blank=True)
    verifications = models.JSONField(default=list, blank=True)
    execution_duration = models.PositiveIntegerField("executionDuration (ms)", null=True, blank=True)
    # {code, message} of an answer that failed midway; its text is what was streamed before (docs/faults.md).
    error = models.JSONField(null=True, blank=True)
    # The knowledge base results the model was given, numbered as it cited them (docs/api.md, "Knowledge bases").
    citations = models.JSONField(null=True, blank=True)
    # Why the answer ended before the model finished it: "user" when its user stopped it (docs/api.md).
    stop_reason = models.CharField("stopReason", max_length=20, null=True, blank=True)
    timestamp = models.DateTimeField(default=timezone.now)
    # The message it follows on its branch: a question's parent is the answer it follows, an answer's
    # its question; null for a session's first (docs/api.md, "Branches"). DO_NOTHING: a session's
    # messages are only ever deleted together, with their session, so a parent never goes before its
    # children, and the messages stay deletable in one statement (no cascade for Django to collect).
    parent = models.ForeignKey("self", on_delete=models.DO_NOTHING, null=True, blank=True, related_name="children", db_index=False)

    class Meta:
        verbose_name = "chat message"
        ordering = ["timestamp"]
        indexes = [
            # GET .../sessions/{sessionId}/messages (newest `limit`, shown oldest first) and the turn's history
            models.Index(fields=["session", "timestamp"], name="chatmessage_session_time"),
            # a message's children (its siblings' list: docs/api.md, "Branches")
            models.Index(fields=["session", "parent"], name="chatmessage_session_parent"),
        ]

    def __str__(self) -> str:
        return f"{self.source} {self.message_id}"
