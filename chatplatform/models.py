"""Bookkeeping of the background worker (chatplatform.tasks): periodic runs and live workers."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class PeriodicRun(models.Model):
    """One period of one periodic job. The row is the claim: whichever worker inserts it first
    enqueues the job, so several workers run each job once per period (unique job + period)."""

    job = models.CharField(max_length=64)
    period = models.BigIntegerField(help_text="the period's number: its start in Unix seconds divided by the job's period")
    period_start = models.DateTimeField()
    claimed_by = models.CharField(max_length=64)
    claimed_at = models.DateTimeField()
    runs = models.PositiveIntegerField(default=0, help_text="times the job ran for this period (1 unless a worker died mid-run)")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    ran_on = models.CharField(max_length=64, blank=True, default="")
    outcome = models.CharField(max_length=10, blank=True, default="", help_text="succeeded or failed")
    result = models.TextField(blank=True, default="")

    class Meta:
        verbose_name = "periodic job run"
        ordering = ["-period_start", "job"]
        constraints = [models.UniqueConstraint(fields=["job", "period"], name="periodicrun_once_per_period")]
        # The admin's list, newest first; pruning by age.
        indexes = [models.Index(fields=["-period_start"], name="periodicrun_start")]

    def __str__(self) -> str:
        return f"{self.job} @ {self.period_start:%Y-%m-%d %H:%M:%S}"


class WorkerProcess(models.Model):
    """A running `manage.py run_worker`; `last_seen` moves every few seconds while it lives. Tasks
    a worker left running when it was killed are handed back to the queue once its row goes stale."""

    worker_id = models.CharField(max_length=64, primary_key=True)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    backend = models.CharField(max_length=20)
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField()

    class Meta:
        verbose_name = "worker process"
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.worker_id} ({self.hostname}:{self.pid})"


class AuditAction(models.TextChoices):
    CREATE = "create", "created"
    UPDATE = "update", "changed"
    DELETE = "delete", "deleted"


class AuditEntry(models.Model):
    """One admin write (Admin API, Django admin, commands): who, when, which object, what changed.

    Written by chatplatform.audit.record from the services both ways in call, in the write's own
    transaction, so a write that rolls back leaves no entry. Secrets are redacted before storing.
    """

    at = models.DateTimeField(default=timezone.now)
    actor = models.CharField(max_length=255, help_text="the userId of the request, or the command")
    action = models.CharField(max_length=10, choices=AuditAction.choices)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=255)
    object_repr = models.CharField(max_length=300, blank=True, default="")
    changes = models.JSONField(default=dict, blank=True, help_text="{field: {before, after}}, secrets redacted")

    class Meta:
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"
        ordering = ["-at", "-id"]
        indexes = [
            models.Index(fields=["-at"], name="audit_at"),  # the admin's list, newest first
            models.Index(fields=["object_type", "object_id", "-at"], name="audit_object"),  # one object's history
            models.Index(fields=["actor", "-at"], name="audit_actor"),  # the actor filter
        ]

    def __str__(self) -> str:
        return f"{self.actor} {self.get_action_display()} {self.object_type} {self.object_id}"


class StoredObject(models.Model):
    """An object of the database-backed store (`chatplatform.storage.DatabaseStorage`): what the
    `widget_store` storage holds by default, e.g. the scripts of store-located web components
    (`webComponent.storeBucket`/`storeKey`, kept under the name `<bucket>/<key>`)."""

    # A bucket (up to 63 characters), "/", and a key of up to 1024 bytes.
    name = models.CharField(max_length=1100, unique=True)
    content = models.BinaryField()
    size = models.PositiveBigIntegerField()
    created = models.DateTimeField()
    modified = models.DateTimeField()

    class Meta:
        verbose_name = "stored object"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
