"""The Django admin of uploaded files."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from chat.files.models import ChatFile


@admin.register(ChatFile)
class ChatFileAdmin(admin.ModelAdmin):
    """Files people attached to messages: listed and deletable (with their bytes), never edited or
    opened here (only their owner reads them, through the Chat API)."""

    list_display = ("name", "user", "chat_app_id", "mime_type", "size", "create_date")
    list_filter = ("mime_type",)
    search_fields = ("name", "user__user_id", "chat_app_id")
    readonly_fields = ("file_id", "user", "chat_app_id", "name", "mime_type", "size", "storage_name", "create_date")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
