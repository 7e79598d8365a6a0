"""Reads on chat records."""

from __future__ import annotations

from django.db.models import QuerySet

from chat.models import ChatUser


def users_search(*, user_id_partial: str, limit: int) -> QuerySet[ChatUser]:
    """Users whose id starts with `user_id_partial`, case-insensitively (index: chatuser_userid_upper)."""
    users = ChatUser.objects.order_by("user_id")
    if user_id_partial:
        users = users.filter(user_id__istartswith=user_id_partial)
    return users[:limit]
