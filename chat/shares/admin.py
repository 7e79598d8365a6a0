"""Shared conversations in the Django admin: seen, and revoked by deleting (docs/api.md, "Share links")."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from chat.shares.models import SessionShare


@admin.register(SessionShare)
class SessionShareAdmin(admin.ModelAdmin):
    list_display = ("share_id", "title", "session", "chat_app_id", "shared_at")
    list_filter = ("chat_app_id", ("shared_at", admin.DateFieldListFilter))
    search_fields = ("share_id", "session__session_id", "session__user__user_id", "title")
    list_select_related = ("session",)
    ordering = ("-shared_at",)
    readonly_fields = ("share_id", "session", "title", "chat_app_id", "agent_id", "shared_at", "messages")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a share is its user's snapshot, taken through the Chat API

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
