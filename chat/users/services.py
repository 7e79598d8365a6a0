"""Writes on users: created on first sight, and their prefs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from chat.users.models import ChatUser


def user_get_or_create(*, user_id: str) -> ChatUser:
    user, _ = ChatUser.objects.get_or_create(user_id=user_id, defaults={"password": "!"})
    return user


def prefs_update(*, user_id: str, prefs: dict[str, Any], partial: bool) -> dict[str, Any]:
    """Replace the prefs, or with `partial` merge them in; a key set to null is removed (docs/api.md, "Users")."""
    with transaction.atomic():
        user, _ = ChatUser.objects.select_for_update().get_or_create(user_id=user_id, defaults={"password": "!"})
        merged = {**user.prefs, **prefs} if partial else dict(prefs)
        user.prefs = {key: value for key, value in merged.items() if value is not None}
        user.save(update_fields=["prefs", "last_update"])
    return user.prefs


def users_deactivate(*, user_ids: Iterable[str]) -> int:
    """Switch accounts off; each is refused at its next request, whatever the credential, and its
    open sockets at their next message (docs/api.md, "Authentication"). Saved one by one, not with
    `update()`: the save drops the cached user that requests read. Returns how many changed."""
    users = list(ChatUser.objects.filter(pk__in=list(user_ids), is_active=True))
    for user in users:
        user.is_active = False
        user.save(update_fields=["is_active", "last_update"])
    return len(users)
