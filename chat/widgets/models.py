"""A widget's data, per user and tag (docs/api.md, "Widgets")."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from chat.users.models import ChatUser


class WidgetData(models.Model):
    """A widget's JSON object for one user and one tag (docs/widgets.md, "Widget data": the widget data
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
