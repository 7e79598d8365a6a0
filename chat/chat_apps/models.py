"""Chat apps (docs/api.md, "Chat apps"): the agent a chat experience talks to, who may use it, and
its features."""

from __future__ import annotations

from django.core.validators import MinValueValidator
from django.db import models

from agents.models import TestType


class ApplyRulesAs(models.TextChoices):
    AND = "and", "Both the user type and the role rule"
    OR = "or", "Either the user type or the role rule"


class ChatAppMode(models.TextChoices):
    STANDALONE = "standalone", "Standalone page"
    EMBEDDED = "embedded", "Embedded in another page"


class ChatApp(models.Model):
    """A chat experience: the agent it talks to, who may use it, and its feature configuration.

    Access (docs/api.md, "Chat apps"): `userTypes` and `userRoles` are each a rule that an empty list passes;
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
    # Days a session is kept after its last message; null: the site's CHAT_RETENTION_DAYS (docs/data.md).
    retention_days = models.PositiveIntegerField(
        "retentionDays", null=True, blank=True, validators=[MinValueValidator(1)], help_text="empty: CHAT_RETENTION_DAYS"
    )
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
