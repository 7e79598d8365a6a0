"""The Django admin of widget data."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from chat.widgets.models import WidgetData


@admin.register(WidgetData)
class WidgetDataAdmin(admin.ModelAdmin):
    """Widgets' objects per user and tag (docs/widgets.md, "Widget data"): listed, read and deletable (a reset for one
    person), never edited here: widgets write them through the Chat API, which checks the size."""

    list_display = ("user", "scope", "tag", "size", "last_update")
    list_filter = ("scope",)
    search_fields = ("user__user_id", "scope", "tag")
    readonly_fields = ("user", "scope", "tag", "data", "size", "create_date", "last_update")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
