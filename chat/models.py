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
            # the idle-session completion job: active sessions by last activity
            models.Index(fields=["last_update"], condition=models.Q(status="active"), name="chatsession_active_idle"),
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
    """The reference system's 27 feedback types, exactly (CONTRACT §5)."""

    USER_THUMBS_UP = "user_thumbs_up", "User thumbs up"
    USER_THUMBS_DOWN = "user_thumbs_down", "User thumbs down"
    INCORRECT_INFORMATION = "incorrect_information", "Incorrect information"
    INCOMPLETE_INFORMATION = "incomplete_information", "Incomplete information"
    OFF_TOPIC = "off_topic", "Off topic"
    HALLUCINATION = "hallucination", "Hallucination"
    CONFUSING_RESPONSE = "confusing_response", "Confusing response"
    OUTDATED_INFORMATION = "outdated_information", "Outdated information"
    INAPPROPRIATE_CONTENT = "inappropriate_content", "Inappropriate content"
    PRIVACY_CONCERN = "privacy_concern", "Privacy concern"
    HARMFUL_CONTENT = "harmful_content", "Harmful content"
    SYSTEM_ERROR = "system_error", "System error"
    TIMEOUT_OCCURRED = "timeout_occurred", "Timeout occurred"
    TOOL_FAILURE = "tool_failure", "Tool failure"
    POOR_PERFORMANCE = "poor_performance", "Poor performance"
    TRAINING_EXAMPLE = "training_example", "Training example"
    CONTEXT_AWARENESS_ISSUE = "context_awareness_issue", "Context awareness issue"
    GOAL_MISALIGNMENT = "goal_misalignment", "Goal misalignment"
    TOOL_CAPABILITY_GAP = "tool_capability_gap", "Tool capability gap"
    TOOL_PERFORMANCE_ISSUE = "tool_performance_issue", "Tool performance issue"
    COST_ISSUE = "cost_issue", "Cost issue"
    HIGH_COMPLEXITY_SESSION = "high_complexity_session", "High complexity session"
    LOW_AI_CONFIDENCE_LEVEL = "low_ai_confidence_level", "Low AI confidence level"
    CRITICAL_ISSUES_PRESENT = "critical_issues_present", "Critical issues present"
    USER_DISSATISFIED = "user_dissatisfied", "User dissatisfied"
    USER_QUESTION_TO_CHAT_AUTHOR = "user_question_to_chat_author", "User question to chat author"
    OTHER = "other", "Other"


class CommentType(models.TextChoices):
    COMMENT = "comment", "Comment"
    CUSTOMER_OUTREACH_RECOMMENDED = "customer_outreach_recommended", "Customer outreach recommended"
    CUSTOMER_OUTREACH_MADE = "customer_outreach_made", "Customer outreach made"
    TECHNICAL_ACTION_REQUIRED = "technical_action_required", "Technical action required"
    TECHNICAL_ACTION_COMPLETED = "technical_action_completed", "Technical action completed"


class CommentStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


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
    type = models.CharField(max_length=40, choices=FeedbackType.choices)
    user_comment = models.CharField(max_length=1000, blank=True, default="")
    created_on = models.DateTimeField(default=timezone.now, editable=False)
    updated_on = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "session feedback"
        verbose_name_plural = "session feedback"
        ordering = ["-created_on"]
        indexes = [
            # GET /api/chat/sessions/{sessionId}/feedback (newest first)
            models.Index(fields=["session", "-created_on"], name="feedback_session_created"),
            # Session search's feedback facets (and `flagged`): the sessions with such feedback.
            models.Index(fields=["status", "session"], name="feedback_status_session"),
            models.Index(fields=["type", "session"], name="feedback_type_session"),
            models.Index(fields=["severity", "session"], name="feedback_severity_session"),
            models.Index(fields=["user_id", "session"], name="feedback_user_session"),
            models.Index(fields=["created_on", "session"], name="feedback_created_session"),
        ]

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


class FeedbackComment(models.Model):
    """An internal comment of the team on a feedback record (CONTRACT §5: `internalComments`).
    Rows of their own, not JSON, so session search filters on their type, status and author by index."""

    comment_id = models.CharField("commentId", max_length=128, primary_key=True, default=_feedback_id)
    # No index of its own: comment_feedback_position starts with it.
    feedback = models.ForeignKey(ChatSessionFeedback, on_delete=models.CASCADE, related_name="internal_comments", db_index=False)
    position = models.PositiveIntegerField(default=0, help_text="order within the feedback's list")
    user_id = models.CharField("userId", max_length=255)
    comment = models.TextField()
    created_on = models.DateTimeField(default=timezone.now)
    type = models.CharField(max_length=40, choices=CommentType.choices, default=CommentType.COMMENT)
    status = models.CharField(max_length=10, choices=CommentStatus.choices, default=CommentStatus.OPEN)

    class Meta:
        verbose_name = "internal comment"
        ordering = ["feedback", "position"]
        indexes = [
            models.Index(fields=["feedback", "position"], name="comment_feedback_position"),
            # Session search: feedbackInternalCommentType / Status / UserId.
            models.Index(fields=["type", "feedback"], name="comment_type_feedback"),
            models.Index(fields=["status", "feedback"], name="comment_status_feedback"),
            models.Index(fields=["user_id", "feedback"], name="comment_user_feedback"),
        ]

    def __str__(self) -> str:
        return f"{self.type} by {self.user_id}"


# --- Session insights (CONTRACT §5) ---------------------------------------------------------------


class AnalysisStatus(models.TextChoices):
    DUE = "due", "Due"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class SessionInsight(models.Model):
    """The AI analysis of a session: the last valid record (`generated_at` set) and the state of the
    analysis under way. A failed analysis leaves the record as it was (never half-filled).

    The record is stored as CONTRACT §5's shape in `scoring`; its facets are copied into columns,
    each indexed for the session search's insight filters."""

    session = models.OneToOneField(ChatSession, on_delete=models.CASCADE, primary_key=True, related_name="insight")
    # The record
    model = models.CharField(max_length=200, blank=True, default="")
    version = models.CharField(max_length=20, blank=True, default="")
    usage = models.JSONField(null=True, blank=True)
    generated_at = models.DateTimeField(null=True, blank=True)
    last_analyzed_message_id = models.UUIDField(null=True, blank=True)
    scoring = models.JSONField(null=True, blank=True)
    detail_markdown = models.TextField(blank=True, default="")
    # Facets of `scoring`, for search
    goal_achievement = models.FloatField(null=True, blank=True)
    user_satisfaction = models.FloatField(null=True, blank=True)
    interaction_quality = models.FloatField(null=True, blank=True)
    ai_accuracy = models.FloatField(null=True, blank=True)
    ai_helpfulness = models.FloatField(null=True, blank=True)
    ai_communication = models.FloatField(null=True, blank=True)
    ai_efficiency = models.FloatField(null=True, blank=True)
    ai_overall = models.FloatField(null=True, blank=True)
    user_sentiment = models.CharField(max_length=20, blank=True, default="")
    goal_completion_status = models.CharField(max_length=20, blank=True, default="")
    satisfaction_level = models.CharField(max_length=20, blank=True, default="")
    requires_followup = models.BooleanField(null=True, blank=True)
    critical_issues_present = models.BooleanField(null=True, blank=True)
    escalation_needed = models.BooleanField(null=True, blank=True)
    session_duration_estimate = models.CharField(max_length=10, blank=True, default="")
    complexity_level = models.CharField(max_length=10, blank=True, default="")
    user_effort_required = models.CharField(max_length=10, blank=True, default="")
    ai_confidence_level = models.CharField(max_length=10, blank=True, default="")
    # The analysis
    analysis_status = models.CharField(max_length=10, choices=AnalysisStatus.choices, default=AnalysisStatus.DUE)
    attempts = models.PositiveIntegerField(default=0, help_text="attempts of the current (or last) analysis")
    error = models.TextField(blank=True, default="", help_text="why the last attempt failed")
    requested_at = models.DateTimeField(default=timezone.now)
    lease_until = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "session insight"
        indexes = [
            # Stalled analyses (recover_stalled_work)
            models.Index(fields=["analysis_status", "requested_at"], name="insight_analysis"),
            # Session search: hasInsights, each score and facet, and the sort by goal achievement.
            models.Index(fields=["generated_at"], name="insight_generated"),
            models.Index(fields=["goal_achievement", "session"], name="insight_goal"),
            models.Index(fields=["user_satisfaction", "session"], name="insight_satisfaction"),
            models.Index(fields=["interaction_quality", "session"], name="insight_interaction"),
            models.Index(fields=["ai_accuracy", "session"], name="insight_ai_accuracy"),
            models.Index(fields=["ai_efficiency", "session"], name="insight_ai_efficiency"),
            models.Index(fields=["ai_overall", "session"], name="insight_ai_overall"),
            models.Index(fields=["user_sentiment", "session"], name="insight_sentiment"),
            models.Index(fields=["goal_completion_status", "session"], name="insight_goal_status"),
            models.Index(fields=["satisfaction_level", "session"], name="insight_satisfaction_level"),
            models.Index(fields=["session_duration_estimate", "session"], name="insight_duration"),
            models.Index(fields=["complexity_level", "session"], name="insight_complexity"),
            models.Index(fields=["user_effort_required", "session"], name="insight_effort"),
            models.Index(fields=["ai_confidence_level", "session"], name="insight_confidence"),
        ]

    def __str__(self) -> str:
        return f"insights of {self.session_id} ({self.analysis_status})"


# --- Webhooks (SPEC.md "Webhooks", CONTRACT §9) ----------------------------------------------------


class WebhookEvent(models.TextChoices):
    SESSION_CREATED = "session.created", "session.created"
    SESSION_COMPLETED = "session.completed", "session.completed"
    FEEDBACK_CREATED = "feedback.created", "feedback.created"
    INSIGHT_GENERATED = "insight.generated", "insight.generated"


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    """One event for one configured endpoint: the outbox row, written in the transaction of the
    event's cause, then delivered by the worker. Its id is the `X-Webhook-Id` of every attempt; the
    body is frozen when the event happens. The endpoint's secret is never stored (CHAT_WEBHOOKS)."""

    delivery_id = models.UUIDField("X-Webhook-Id", primary_key=True, default=uuid.uuid4, editable=False)
    event = models.CharField(max_length=20, choices=WebhookEvent.choices)
    endpoint = models.CharField(max_length=2000)
    body = models.TextField(help_text="the JSON posted, exactly")
    session_id = models.UUIDField("sessionId")
    created_at = models.DateTimeField(default=timezone.now)
    retry_from = models.DateTimeField(default=timezone.now, help_text="failed attempts are retried for CHAT_WEBHOOK_RETRY_HOURS from then")
    state = models.CharField(max_length=10, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    lease_until = models.DateTimeField(null=True, blank=True, help_text="a worker is attempting it until then")
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_status = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        verbose_name = "webhook delivery"
        verbose_name_plural = "webhook deliveries"
        ordering = ["-created_at"]
        indexes = [
            # The worker's poll: pending deliveries due now.
            models.Index(fields=["next_attempt_at"], condition=models.Q(state="pending"), name="delivery_due"),
            # The admin's list (newest first) and its filters.
            models.Index(fields=["-created_at"], name="delivery_created"),
            models.Index(fields=["event", "-created_at"], name="delivery_event"),
            models.Index(fields=["state", "-created_at"], name="delivery_state"),
            models.Index(fields=["session_id"], name="delivery_session"),
        ]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint} ({self.state})"


class WebhookAttempt(models.Model):
    """One POST of a delivery: when, how long, what came back."""

    # No index of its own: attempt_delivery_number starts with it.
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log", db_index=False)
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    response_excerpt = models.TextField(blank=True, default="")
    worker = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        verbose_name = "webhook attempt"
        ordering = ["delivery", "number"]
        indexes = [models.Index(fields=["delivery", "number"], name="attempt_delivery_number")]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}: {self.status_code or self.error[:40]}"


class WidgetData(models.Model):
    """A widget's JSON object for one user and one tag (issue 22, CONTRACT §13: the widget data
    API), so a widget keeps its state across sessions. `size` is its serialized size in bytes."""

    user = models.ForeignKey(ChatUser, on_delete=models.CASCADE, related_name="widget_data")
    scope = models.CharField(max_length=100)
    tag = models.CharField(max_length=100)
    data = models.JSONField(default=dict)
    size = models.PositiveIntegerField(default=0)
    create_date = models.DateTimeField(default=timezone.now, editable=False)
    last_update = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "widget data"
        verbose_name_plural = "widget data"
        ordering = ["user", "scope", "tag"]
        # One object per user and tag; its index serves every read and write of the API.
        constraints = [models.UniqueConstraint(fields=["user", "scope", "tag"], name="widgetdata_user_scope_tag_unique")]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.scope}.{self.tag}"
