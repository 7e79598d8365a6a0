"""Feedback on a session (docs/api.md, "Feedback"): the reference system's 27 types, its workflow
status, and the team's internal comments."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from chat.sessions.models import ChatSession


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
    """The reference system's 27 feedback types, exactly (docs/api.md, "Feedback")."""

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


class FeedbackComment(models.Model):
    """An internal comment of the team on a feedback record (docs/api.md, "Feedback": `internalComments`).
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
