"""A session's AI insights (docs/api.md, "Session insights"): the record, its searchable facets,
and where its analysis stands."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from chat.sessions.models import ChatSession

# --- Session insights --------------------------------------------------------------------------------


class AnalysisStatus(models.TextChoices):
    DUE = "due", "Due"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class SessionInsight(models.Model):
    """The AI analysis of a session: the last valid record (`generated_at` set) and the state of the
    analysis under way. A failed analysis leaves the record as it was (never half-filled).

    The record is stored in its API shape (docs/api.md, "Session insights") in `scoring`; its facets are copied into columns,
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
