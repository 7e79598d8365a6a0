"""A person's data in one JSON document (docs/api.md, "Your data"): what the Chat API would list for
them, all of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chat.feedback.models import ChatSessionFeedback
from chat.files.models import ChatFile
from chat.sessions.models import ChatMessage, ChatSession
from chat.users.models import ChatUser
from chat.widgets.models import WidgetData


@dataclass(frozen=True)
class UserExport:
    """A person's data as records; chat.governance.serializers.UserExportSerializer renders it."""

    user: ChatUser
    widget_data: list[WidgetData]
    sessions: list[ChatSession]
    messages: dict[Any, list[ChatMessage]]  # session id → its messages, oldest first
    siblings: dict[Any, list[Any]]  # message id → its siblings' ids, as the messages list gives them
    feedback: list[ChatSessionFeedback]
    files: list[ChatFile]


def user_export(*, user: ChatUser) -> UserExport:
    """`{user, prefs, widgetData, sessions: [{…session, messages}], feedback, files}`; files as
    their records (the bytes by their `url`). Sessions newest first, messages oldest first, as
    the Chat API lists them."""
    sessions = list(ChatSession.objects.filter(user=user).order_by("-create_date"))
    messages: dict[Any, list[ChatMessage]] = {}
    children: dict[tuple[Any, Any], list[Any]] = {}
    for message in ChatMessage.objects.filter(session__user=user).order_by("timestamp", "message_id"):
        messages.setdefault(message.session_id, []).append(message)
        children.setdefault((message.session_id, message.parent_id), []).append(message.pk)
    # Every branch is the user's data: all of a session's messages, each with its parent and siblings
    # as the messages list gives them (docs/api.md, "Branches").
    siblings = {message.pk: children[(message.session_id, message.parent_id)] for found in messages.values() for message in found}
    feedback = ChatSessionFeedback.objects.filter(user_id=user.pk).prefetch_related("internal_comments").order_by("-created_on")
    return UserExport(
        user=user,
        widget_data=list(WidgetData.objects.filter(user=user).order_by("scope", "tag")),
        sessions=sessions,
        messages=messages,
        siblings=siblings,
        feedback=list(feedback),
        files=list(ChatFile.objects.filter(user=user).order_by("-create_date")),
    )
