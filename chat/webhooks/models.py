"""Webhook deliveries (docs/api.md, "Webhooks"): the outbox rows and each attempt."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

# --- Webhooks (docs/api.md, "Webhooks") ------------------------------------------------------------


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
    # The turn's trace context when the event happened, sent as `traceparent` (docs/deploy.md, "Traces").
    traceparent = models.CharField(max_length=55, blank=True, default="")

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
