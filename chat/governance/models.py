"""Usage counters (docs/api.md, "Usage limits"): what each user's turns used per UTC day and
calendar month, site-wide and per chat app, counted in the database so that every process agrees."""

from __future__ import annotations

from django.db import models

from chat.users.models import ChatUser

SITE = ""  # the chat app id of the site-wide counters (every chat app together)


class UsagePeriod(models.TextChoices):
    DAY = "day", "UTC day"
    MONTH = "month", "Calendar month (UTC)"


class UsageCounter(models.Model):
    """Tokens and USD cost of one user's turns in one period, in one chat app or (`chat_app_id`
    "", not null: a NULL never conflicts in a unique index, and turns add to it by upsert) in all.

    Only moved by `chat.governance.usage.usage_count`'s one upsert per turn (an atomic increment)."""

    # No index of its own: the unique constraint's index starts with it.
    user = models.ForeignKey(ChatUser, on_delete=models.CASCADE, related_name="usage_counters", db_index=False)
    chat_app_id = models.CharField("chatAppId", max_length=128, blank=True, default=SITE, help_text="empty: all chat apps")
    period = models.CharField(max_length=5, choices=UsagePeriod.choices)
    period_start = models.DateField()
    tokens = models.BigIntegerField(default=0)
    cost_usd = models.FloatField("costUsd", default=0.0)

    class Meta:
        verbose_name = "usage counter"
        ordering = ["user", "-period_start"]
        # The turn's admission reads a user's counters of today and this month through this index.
        constraints = [
            models.UniqueConstraint(fields=["user", "period_start", "period", "chat_app_id"], name="usagecounter_user_period_app_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.chat_app_id or 'site'} {self.period} {self.period_start}"
