"""Reads on sessions and messages: only their user's through the Chat API."""

from __future__ import annotations

import functools
import uuid
from collections import namedtuple
from typing import Any

from django.db import connections

from chat.sessions.models import ChatMessage, ChatSession
from chatplatform import db
from chatplatform.api.errors import Code, NotFound

# --- sessions, messages, feedback -------------------------------------------------------------


def session_uuid(session_id: Any) -> uuid.UUID:
    """`session_id` as the UUID it names; 404 INVALID_SESSION_ID when it cannot name a session."""
    try:
        return uuid.UUID(str(session_id))
    except (ValueError, TypeError, AttributeError):
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID) from None


def session_get(*, session_id: Any, user_id: str | None = None, chat_app_id: str | None = None) -> ChatSession:
    """The session, or 404 INVALID_SESSION_ID; with `user_id` (or `chat_app_id`) another user's
    (or app's) session is "not found" too, never a 403 that would confirm it exists (docs/api.md, "Who may read what")."""
    sessions = ChatSession.objects.filter(pk=session_uuid(session_id))
    if user_id is not None:
        sessions = sessions.filter(user_id=user_id)
    if chat_app_id is not None:
        sessions = sessions.filter(chat_app_id=chat_app_id)
    session = sessions.first()
    if session is None:
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID)
    return session


# A user's session list as plain records with the model's attribute names: the fields ChatSessionSerializer reads.
_LISTED_FIELDS = [field for field in ChatSession._meta.concrete_fields if not field.name.startswith("turn_")]
_LISTED = tuple(field.attname for field in _LISTED_FIELDS)
SessionRecord = namedtuple("SessionRecord", _LISTED)  # type: ignore[misc]


@functools.cache
def _sessions_for_user_sql(vendor: str, in_chat_app: bool) -> str:
    """The list's query, written out once: Django takes longer to compile it than it runs. The pinned
    sessions, then the others, each newest first and each through its own index (docs/api.md, "Pins")."""
    table, column = db.sql_names(ChatSession)
    names = [ChatSession._meta.get_field(name.removesuffix("_id") if name == "user_id" else name).name for name in _LISTED]
    columns = ", ".join(column(name) for name in names)
    where = f"{column('user')} = %s" + (f" AND {column('chat_app_id')} = %s" if in_chat_app else "")
    created = column("create_date")
    pinned = f"SELECT 0 AS grp, {columns} FROM {table} WHERE {where} AND {column('pinned_at')} IS NOT NULL ORDER BY {created} DESC LIMIT %s"
    others = f"SELECT 1 AS grp, {columns} FROM {table} WHERE {where} AND {column('pinned_at')} IS NULL ORDER BY {created} DESC LIMIT %s"
    both = f"SELECT * FROM ({pinned}) AS p UNION ALL SELECT * FROM ({others}) AS o"
    listed = ", ".join(f"u.{column(name)}" for name in names)
    return f"SELECT {listed} FROM ({both}) AS u ORDER BY u.grp, u.{created} DESC LIMIT %s"


def sessions_for_user(*, user_id: str, chat_app_id: str | None, limit: int) -> list[SessionRecord]:
    """A user's sessions, the pinned first, each group newest first (indexes chatsession_user_pinned,
    chatsession_user_created / chatsession_user_app_created). Read on the request's own thread,
    which keeps its connection (GET /api/chat/sessions is a frontend's most frequent read)."""
    sql = _sessions_for_user_sql(connections["default"].vendor, bool(chat_app_id))
    where = [user_id, *([chat_app_id] if chat_app_id else [])]
    params = [*where, limit, *where, limit, limit]
    return [SessionRecord(*row) for row in db.select(ChatSession, _LISTED, sql, params)]


def session_messages(*, session: ChatSession, limit: int) -> list[ChatMessage]:
    """The newest `limit` messages, oldest first (docs/api.md, "Sessions"; index chatmessage_session_time)."""
    newest = list(ChatMessage.objects.filter(session=session).order_by("-timestamp")[:limit])
    newest.reverse()
    return newest
