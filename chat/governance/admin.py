"""The Django admin's users list, with erasure (docs/data.md, "Where it is, and what reaches it"): the action and the delete
buttons both erase through `erase_user`, so the admin never leaves a deleted user's data behind.
And the usage counters, read-only: who used how much, per day and month."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from chat.governance.models import UsageCounter
from chat.governance.services import erase_user
from chat.users.admin import ChatUserAdmin
from chat.users.models import ChatUser
from chatplatform.admin import ReadOnlyAdmin
from chatplatform.api.permissions import caller_id


def _erase(request: HttpRequest, user_ids: list[str]) -> None:
    for user_id in user_ids:
        counts = erase_user(user_id=user_id, actor=caller_id(request))
        summary = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
        messages.success(request, f"Erased user {user_id}: {summary}.")


class ErasingChatUserAdmin(ChatUserAdmin):
    actions = (*ChatUserAdmin.actions, "erase_users")

    @admin.action(description="Erase selected users and all their data", permissions=["delete"])
    def erase_users(self, request: HttpRequest, queryset: QuerySet[ChatUser]) -> None:
        _erase(request, list(queryset.values_list("pk", flat=True)))

    def delete_model(self, request: HttpRequest, obj: ChatUser) -> None:
        _erase(request, [obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ChatUser]) -> None:
        _erase(request, list(queryset.values_list("pk", flat=True)))


admin.site.unregister(ChatUser)
admin.site.register(ChatUser, ErasingChatUserAdmin)


@admin.register(UsageCounter)
class UsageCounterAdmin(ReadOnlyAdmin):
    list_display = ("user", "chat_app_id", "period", "period_start", "tokens", "cost_usd")
    list_filter = ("period", "chat_app_id")
    search_fields = ("user__user_id",)
    ordering = ("-period_start", "-cost_usd")
