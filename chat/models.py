"""Chat records (CONTRACT §5): users first; sessions, messages and feedback join them later."""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.core.cache import cache
from django.core.files.storage import storages
from django.db import models
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone

from agents.models import TestType
from chatplatform.api.exceptions import UNAVAILABLE

# Authenticated users are kept in the shared cache: reading one there costs a fraction of the
# ORM query, and every save or delete drops the entry. In front of it, each process remembers a
# user for one second, which spares the Redis round trip on busy paths: a change made in another
# process (say, an operator deactivating a user) takes effect there within that second.
USER_CACHE_SECONDS = 300
LOCAL_USER_SECONDS = 1.0
_local_users: dict[str, tuple[float, dict[str, Any]]] = {}
_LOCAL_USERS_MAX = 10_000


def _user_cache_key(user_id: str) -> str:
    return f"chatuser:{user_id}"


def forget_local_users() -> None:
    """Drop this process's one-second memory of users (tests roll back the rows behind it)."""
    _local_users.clear()


class UserType(models.TextChoices):
    INTERNAL = "internal-user", "Internal user"
    EXTERNAL = "external-user", "External user"


# JWT claim → ChatUser field (CONTRACT §3).
_CLAIM_FIELDS = {
    "email": "email",
    "given_name": "first_name",
    "family_name": "last_name",
    "user_type": "user_type",
    "custom_data": "custom_data",
    "roles": "roles",
}


_USER_TYPES = frozenset({None, *UserType.values})


class ChatUserManager(BaseUserManager["ChatUser"]):
    def create_user(self, user_id: str, password: str | None = None, **fields: Any) -> ChatUser:
        user = self.model(user_id=user_id, **fields)
        user.set_password(password) if password else user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(self, user_id: str, password: str | None = None, **fields: Any) -> ChatUser:
        fields.update(is_staff=True, is_superuser=True, user_type=UserType.INTERNAL)
        return self.create_user(user_id, password, **fields)

    def _from_cache(self, key: str) -> ChatUser | None:
        now = time.monotonic()
        local = _local_users.get(key)
        if local is not None and now - local[0] < LOCAL_USER_SECONDS:
            values: Any = local[1]
        else:
            try:
                values = cache.get(key)
            except UNAVAILABLE:
                raise  # the cache is down: the request fails fast (503), not slowly twice
            except Exception:  # unreadable (written by another release): a miss
                return None
            if isinstance(values, dict):
                if len(_local_users) >= _LOCAL_USERS_MAX:
                    _local_users.clear()
                _local_users[key] = (now, values)
        attnames = [f.attname for f in self.model._meta.concrete_fields]
        if not isinstance(values, dict) or list(values) != attnames:  # fields of another release: a miss
            return None
        return self.model.from_db(self.db, attnames, list(values.values()))

    def sync_from_claims(self, claims: dict[str, Any]) -> ChatUser:
        """The user a verified token names: created on first sight, refreshed when claims change."""
        values = {field: claims[claim] for claim, field in _CLAIM_FIELDS.items() if claim in claims}
        if values.get("user_type") not in _USER_TYPES:
            values.pop("user_type")
        if not isinstance(values.get("custom_data", {}), dict):
            values.pop("custom_data")
        if not isinstance(values.get("roles", []), list):
            values.pop("roles")
        key = _user_cache_key(claims["sub"])
        user = self._from_cache(key)
        if user is None:
            user, created = self.get_or_create(user_id=claims["sub"], defaults={**values, "password": "!"})
            if created:
                return user
            # Field values, not the instance: a pickled model of another release may not load.
            cache.set(key, {f.attname: getattr(user, f.attname) for f in user._meta.concrete_fields}, USER_CACHE_SECONDS)
        changed = [field for field, value in values.items() if getattr(user, field) != value]
        if changed:
            for field in changed:
                setattr(user, field, values[field])
            user.save(update_fields=[*changed, "last_update"])
        return user


class ChatUser(AbstractBaseUser, PermissionsMixin):
    """A person using chat apps, and (with `is_staff`) an operator of the Django admin."""

    user_id = models.CharField("userId", max_length=255, primary_key=True)
    email = models.EmailField(blank=True, default="")
    first_name = models.CharField(max_length=150, blank=True, default="")
    last_name = models.CharField(max_length=150, blank=True, default="")
    user_type = models.CharField(max_length=20, choices=UserType.choices, default=UserType.EXTERNAL)
    custom_data = models.JSONField(default=dict, blank=True)
    roles = models.JSONField(default=list, blank=True)
    prefs = models.JSONField(default=dict, blank=True)
    is_staff = models.BooleanField(default=False, help_text="May log in to the Django admin; is an admin of the API.")
    is_active = models.BooleanField(default=True)
    create_date = models.DateTimeField(auto_now_add=True)
    last_update = models.DateTimeField(auto_now=True)

    objects = ChatUserManager()

    USERNAME_FIELD = "user_id"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        verbose_name = "chat user"
        indexes = [models.Index(fields=["email"], name="chatuser_email")]  # admin search by email

    def __str__(self) -> str:
        return self.user_id

    @property
    def is_chat_admin(self) -> bool:
        """CONTRACT §3: admin = `is_staff`, or a token whose roles hold CHAT_ADMIN_ROLE."""
        return self.is_staff or settings.CHAT_ADMIN_ROLE in (self.roles or [])


@receiver(post_save, sender=ChatUser)
@receiver(post_delete, sender=ChatUser)
def _forget_cached_user(sender: type[ChatUser], instance: ChatUser, **kwargs: Any) -> None:
    key = _user_cache_key(instance.pk)
    _local_users.pop(key, None)
    cache.delete(key)


class ApplyRulesAs(models.TextChoices):
    AND = "and", "Both the user type and the role rule"
    OR = "or", "Either the user type or the role rule"


class ChatAppMode(models.TextChoices):
    STANDALONE = "standalone", "Standalone page"
    EMBEDDED = "embedded", "Embedded in another page"


class ChatApp(models.Model):
    """A chat experience: the agent it talks to, who may use it, and its feature configuration.

    Access (CONTRACT §5): `userTypes` and `userRoles` are each a rule that an empty list passes;
    `applyRulesAs` combines them. Deleting the agent is refused while a chat app uses it.
    """

    chat_app_id = models.CharField("chatAppId", max_length=128, primary_key=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    agent = models.ForeignKey("agents.AgentDefinition", on_delete=models.PROTECT, related_name="chat_apps")
    enabled = models.BooleanField(default=True)
    user_types = models.JSONField(default=list, blank=True)
    user_roles = models.JSONField(default=list, blank=True)
    apply_rules_as = models.CharField(max_length=3, choices=ApplyRulesAs.choices, default=ApplyRulesAs.AND)
    modes_supported = models.JSONField(default=list, blank=True)
    features = models.JSONField(default=dict, blank=True)
    dont_cache_this = models.BooleanField(default=False)
    test_type = models.CharField(max_length=10, choices=TestType.choices, null=True, blank=True)
    create_date = models.DateTimeField(auto_now_add=True)
    last_update = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "chat app"
        ordering = ["chat_app_id"]
        indexes = [
            models.Index(fields=["enabled"], name="chatapp_enabled"),  # GET /api/chat/chat-apps
            models.Index(fields=["test_type", "create_date"], name="chatapp_mock_cleanup"),  # cleanup_mock_records
        ]

    def __str__(self) -> str:
        return self.chat_app_id


# --- Sessions, messages, feedback (CONTRACT §5) -----------------------------------------------


class SessionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    COMPLETED = "completed", "Completed"


class InvocationMode(models.TextChoices):
    CHAT_APP = "chat-app", "Chat app"
    DIRECT_AGENT_INVOKE = "direct-agent-invoke", "Direct agent invoke"
    CHAT_APP_COMPONENT = "chat-app-component", "Chat app component"


class TurnSource(models.TextChoices):
    """Who sent a converse request (SPEC.md `source`)."""

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
            # session search by chatAppId, and the admin's chat app filter
            models.Index(fields=["chat_app_id", "-create_date"], name="chatsession_app_created"),
            # session search without filters / by date only
            models.Index(fields=["-create_date"], name="chatsession_created"),
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
    # The knowledge base results the model was given, numbered as it cited them (CONTRACT §11).
    citations = models.JSONField(null=True, blank=True)
    timestamp = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "chat message"
        ordering = ["timestamp"]
        # GET .../sessions/{sessionId}/messages (newest `limit`, shown oldest first) and the turn's history
        indexes = [models.Index(fields=["session", "timestamp"], name="chatmessage_session_time")]

    def __str__(self) -> str:
        return f"{self.source} {self.message_id}"


class FeedbackStatus(models.TextChoices):
    OPEN = "open", "Open"
    IN_REVIEW = "in_review", "In review"
    RESOLVED = "resolved", "Resolved"
    CLOSED = "closed", "Closed"


class FeedbackSeverity(models.TextChoices):
    LOW = "low", "Low"
    MEDIUM = "medium", "Medium"
    HIGH = "high", "High"
    CRITICAL = "critical", "Critical"


class FeedbackType(models.TextChoices):
    THUMBS_UP = "thumbs_up", "Thumbs up"
    THUMBS_DOWN = "thumbs_down", "Thumbs down"
    INCORRECT_ANSWER = "incorrect_answer", "Incorrect answer"
    INCOMPLETE_ANSWER = "incomplete_answer", "Incomplete answer"
    HARMFUL_CONTENT = "harmful_content", "Harmful content"
    BUG = "bug", "Bug"
    FEATURE_REQUEST = "feature_request", "Feature request"
    OTHER = "other", "Other"


def _feedback_id() -> str:
    return str(uuid.uuid4())


class ChatSessionFeedback(models.Model):
    """Feedback on a session (or one of its messages), from its user or from an operator."""

    feedback_id = models.CharField("feedbackId", max_length=128, primary_key=True, default=_feedback_id)
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="feedback")
    user_id = models.CharField("userId", max_length=255)
    message_id = models.CharField("messageId", max_length=64, null=True, blank=True)
    reported_by_human = models.BooleanField(default=True)
    created_by_customer = models.BooleanField(default=True)
    status = models.CharField(max_length=10, choices=FeedbackStatus.choices, default=FeedbackStatus.OPEN)
    severity = models.CharField(max_length=10, choices=FeedbackSeverity.choices, null=True, blank=True)
    type = models.CharField(max_length=20, choices=FeedbackType.choices)
    user_comment = models.CharField(max_length=1000, blank=True, default="")
    internal_comments = models.TextField(blank=True, default="")
    created_on = models.DateTimeField(default=timezone.now, editable=False)
    updated_on = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "session feedback"
        verbose_name_plural = "session feedback"
        ordering = ["-created_on"]
        # GET /api/chat/sessions/{sessionId}/feedback (newest first)
        indexes = [models.Index(fields=["session", "-created_on"], name="feedback_session_created")]

    def __str__(self) -> str:
        return f"{self.type} on {self.session_id}"


# --- Files attached to messages (issue 21) ------------------------------------------------------


class ChatFile(models.Model):
    """A file a user uploaded to attach to a message (ChatMessageFile on the wire).

    The bytes live in the `chat_files` storage (local files, or an S3-compatible bucket) under a
    name made of the file's id only: nothing a user typed reaches a path or a key. Only its owner
    reads it back (GET /api/chat/files/{fileId}/content).
    """

    file_id = models.UUIDField("fileId", primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(ChatUser, on_delete=models.CASCADE, related_name="chat_files")
    chat_app_id = models.CharField("chatAppId", max_length=128)
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    storage_name = models.CharField(max_length=255, editable=False)
    create_date = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "chat file"
        ordering = ["-create_date"]

    def __str__(self) -> str:
        return f"{self.name} ({self.file_id})"

    def as_message_file(self) -> dict[str, Any]:
        """ChatMessageFile: what a message stores and lists about the file."""
        return {
            "fileId": str(self.file_id),
            "fileName": self.name,
            "mimeType": self.mime_type,
            "size": self.size,
            "url": f"/api/chat/files/{self.file_id}/content",
        }


@receiver(post_delete, sender=ChatFile)
def _delete_stored_bytes(sender: type[ChatFile], instance: ChatFile, **kwargs: Any) -> None:
    storages["chat_files"].delete(instance.storage_name)
