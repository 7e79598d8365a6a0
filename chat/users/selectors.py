"""Reads on users."""

from __future__ import annotations

from django.db.models import QuerySet

from chat.users.models import ChatUser
from chatplatform.api.errors import NotFound


def users_search(*, user_id_partial: str, limit: int) -> QuerySet[ChatUser]:
    """Users whose id starts with `user_id_partial`, case-insensitively (index: chatuser_userid_upper)."""
    users = ChatUser.objects.order_by("user_id")
    if user_id_partial:
        users = users.filter(user_id__istartswith=user_id_partial)
    return users[:limit]


def user_get(*, user_id: str) -> ChatUser:
    """An existing user, or 404 NOT_FOUND (docs/api.md, "Envelope")."""
    user = ChatUser.objects.filter(user_id=user_id).first()
    if user is None:
        raise NotFound(f"user {user_id} not found")
    return user
