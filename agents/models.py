"""Agent definitions (docs/api.md, "Agents") and their immutable version history."""

from __future__ import annotations

from django.db import models


class TestType(models.TextChoices):
    MOCK = "mock", "Mock (deleted after one day)"


class AgentDefinition(models.Model):
    """A prompt template, the tools it may call, and who may use it.

    Optional JSON fields are null when absent: `accessRules` null means the agent is open to
    everyone, which differs from an empty list only in intent, so both are kept as sent.
    `version` only moves through `agents.services`, which also writes an AgentVersion row.
    """

    agent_id = models.CharField("agentId", max_length=128, primary_key=True)
    base_prompt = models.TextField()
    tool_ids = models.JSONField(default=list, blank=True)
    foundation_model = models.CharField(max_length=200, null=True, blank=True)
    verification_foundation_model = models.CharField(max_length=200, null=True, blank=True)
    access_rules = models.JSONField(null=True, blank=True)
    rollout_policy = models.JSONField(null=True, blank=True)
    collaborators = models.JSONField(null=True, blank=True)
    agent_collaboration = models.JSONField(null=True, blank=True)
    knowledge_bases = models.JSONField(null=True, blank=True)
    custom = models.JSONField(null=True, blank=True)
    runtime_adapter = models.CharField(max_length=500, null=True, blank=True)
    dont_cache_this = models.BooleanField(default=False)
    test_type = models.CharField(max_length=10, choices=TestType.choices, null=True, blank=True)
    version = models.PositiveIntegerField(default=1, editable=False)
    created_by = models.CharField(max_length=255, editable=False)
    last_modified_by = models.CharField(max_length=255, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "agent"
        ordering = ["agent_id"]
        indexes = [
            models.Index(fields=["test_type", "created_at"], name="agent_mock_cleanup"),  # cleanup_mock_records
        ]

    def __str__(self) -> str:
        return self.agent_id


class AgentVersion(models.Model):
    """One version of an agent as it was written: the full definition in wire form.

    Rows are only ever inserted (by `agents.services`); a rollback copies one of them into a new
    version rather than moving the agent back, so the history stays append-only.
    """

    agent = models.ForeignKey(AgentDefinition, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    definition = models.JSONField()
    modified_by = models.CharField(max_length=255)
    modified_at = models.DateTimeField()

    class Meta:
        verbose_name = "agent version"
        ordering = ["agent", "-version"]
        constraints = [
            # Also the index of the versions list and of the rollback lookup (agent, version).
            models.UniqueConstraint(fields=["agent", "version"], name="agentversion_unique_version"),
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} v{self.version}"
