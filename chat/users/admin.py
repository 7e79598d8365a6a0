"""The Django admin of users: the same records sign in to the admin and chat."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserCreationForm
from django.db.models import QuerySet
from django.http import HttpRequest

from chat.users.models import ChatUser
from chat.users.services import users_deactivate
from chatplatform.admin_forms import JSONEditor, JSONField


class ChatUserCreationForm(UserCreationForm):
    class Meta:
        model = ChatUser
        fields = ("user_id",)


@admin.register(ChatUser)
class ChatUserAdmin(UserAdmin):
    add_form = ChatUserCreationForm
    list_display = ("user_id", "email", "first_name", "last_name", "user_type", "is_staff", "last_update")
    list_filter = ("user_type", "is_staff", "is_active")
    search_fields = ("user_id", "email")
    ordering = ("user_id",)
    readonly_fields = ("create_date", "last_update", "last_login")
    fieldsets = (
        (None, {"fields": ("user_id", "password")}),
        ("Profile", {"fields": ("email", "first_name", "last_name", "user_type", "custom_data", "roles", "prefs")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("create_date", "last_update", "last_login")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("user_id", "password1", "password2")}),)
    actions: tuple[str, ...] = ("deactivate",)  # ErasingChatUserAdmin adds its own

    @admin.action(description="Deactivate selected chat users (out at once)")
    def deactivate(self, request: HttpRequest, queryset: QuerySet[ChatUser]) -> None:
        count = users_deactivate(user_ids=queryset.values_list("pk", flat=True))
        self.message_user(
            request,
            f"{count} chat user(s) deactivated: they are out at once. Their tokens and cookies are refused at their next "
            "request, and their open chat sockets are closed at their next message.",
            messages.SUCCESS,
        )

    # UserAdmin.get_form's own signature (no `change`), which its stubs ignore the same way.
    def get_form(self, request: HttpRequest, obj: ChatUser | None = None, **kwargs: Any) -> type[forms.ModelForm[ChatUser]]:  # type: ignore[override]
        form = super().get_form(request, obj, **kwargs)
        for name in ("custom_data", "roles", "prefs"):
            if name in form.base_fields:
                form.base_fields[name] = JSONField(required=False, widget=JSONEditor(height="160px"))
        return form
