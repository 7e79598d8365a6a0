"""A person's data in one JSON document (docs/api.md, "Your data"): what the Chat API would list for
them, all of it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from chat.feedback.models import ChatSessionFeedback
from chat.feedback.serializers import FeedbackSerializer
from chat.files.models import ChatFile
from chat.files.serializers import ChatMessageFileSerializer
from chat.sessions.models import ChatMessage, ChatSession
from chat.sessions.serializers import ChatMessageSerializer, ChatSessionSerializer
from chat.users.models import ChatUser
from chat.users.serializers import ChatUserSerializer
from chat.widgets.models import WidgetData


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")  # as the Chat API writes its dates


def user_export(*, user: ChatUser) -> dict[str, Any]:
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
    return {
        "user": ChatUserSerializer(user).data,
        "prefs": user.prefs,
        "widgetData": [
            {"scope": item.scope, "tag": item.tag, "data": item.data, "lastUpdate": _iso(item.last_update)}
            for item in WidgetData.objects.filter(user=user).order_by("scope", "tag")
        ],
        "sessions": [
            {
                **ChatSessionSerializer(session).data,
                "messages": ChatMessageSerializer(messages.get(session.pk, []), many=True, context={"siblings": siblings}).data,
            }
            for session in sessions
        ],
        "feedback": FeedbackSerializer(feedback, many=True).data,
        "files": [
            {**ChatMessageFileSerializer(file).data, "chatAppId": file.chat_app_id, "createDate": _iso(file.create_date)}
            for file in ChatFile.objects.filter(user=user).order_by("-create_date")
        ],
    }
