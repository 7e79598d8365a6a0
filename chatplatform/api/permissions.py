"""Who may do what (docs/api.md, "Who may read what"): the admin rule and the userId rule."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from rest_framework import permissions
from rest_framework.request import Request

from chatplatform.api.errors import InvalidRequest, PermissionDenied


def is_admin(user: Any) -> bool:
    return bool(getattr(user, "is_chat_admin", False))


class IsChatAdmin(permissions.BasePermission):
    """Admin API: `is_staff`, or a token whose `roles` hold CHAT_ADMIN_ROLE."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        if not is_admin(request.user):
            raise PermissionDenied(getattr(view, "admin_denied_message", "insufficient permissions: admin privileges are required"))
        return True


def caller_id(request: HttpRequest | Request) -> str:
    """The signed-in caller's userId: the Django admin and the API's views serve signed-in users only."""
    assert request.user.is_authenticated
    return request.user.pk


def acting_user_id(request: Request, user_id: Any) -> str:
    """The userId a Chat API request acts for: the caller's own, or anyone's for an admin.

    Absent means the caller. Another user's id from a non-admin is 403 INSUFFICIENT_PERMISSIONS.
    """
    return acting_for(request.user, user_id)


def acting_for(user: Any, user_id: Any) -> str:
    """`acting_user_id` for a caller known outside DRF (the doors)."""
    own = user.pk
    if user_id in (None, ""):
        return own
    if "\x00" in str(user_id):  # as DRF's CharField refuses them in a body (the schema's pattern)
        raise InvalidRequest("Null characters are not allowed.", field="userId")
    if str(user_id) != own and not is_admin(user):
        raise PermissionDenied("insufficient permissions: userId must be your own")
    return str(user_id)
