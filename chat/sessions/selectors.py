"""Reads on sessions and messages: only their user's through the Chat API."""

from __future__ import annotations

import functools
import uuid
from collections import namedtuple
from dataclasses import dataclass
from typing import Any

from django.db import connections

from chat.sessions.models import ChatMessage, ChatSession, MessageSource
from chatplatform import db
from chatplatform.api.errors import Code, InvalidRequest, NotFound

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


def _sessions_for_user(user_id: str, chat_app_id: str | None, limit: int) -> list[SessionRecord]:
    sql = _sessions_for_user_sql(connections["default"].vendor, bool(chat_app_id))
    where = [user_id, *([chat_app_id] if chat_app_id else [])]
    params = [*where, limit, *where, limit, limit]
    return [SessionRecord(*row) for row in db.select(ChatSession, _LISTED, sql, params)]


def sessions_for_user(*, user_id: str, chat_app_id: str | None, limit: int) -> list[SessionRecord]:
    """A user's sessions, the pinned first, each group newest first (indexes chatsession_user_pinned,
    chatsession_user_created / chatsession_user_app_created),
    read on the database threads (GET /api/chat/sessions is a frontend's most frequent read)."""
    return db.call_on_db_thread(_sessions_for_user, user_id, chat_app_id, limit)


def session_messages(*, session: ChatSession, limit: int) -> list[ChatMessage]:
    """The current branch's newest `limit` messages, oldest first (docs/api.md, "Sessions", "Branches")."""
    return branch(session=session, limit=limit).messages


# --- branches (docs/api.md, "Branches") --------------------------------------------------------


@dataclass(frozen=True)
class Branch:
    """A path of a session's message tree: `messages` from the session's start to `leaf_id`, oldest
    first; `siblings` each message's siblings' ids (itself included, oldest first)."""

    messages: list[ChatMessage]
    siblings: dict[uuid.UUID, list[uuid.UUID]]
    leaf_id: uuid.UUID | None


def branch(
    *, session: ChatSession, leaf_id: uuid.UUID | None = None, through_id: uuid.UUID | None = None, limit: int | None = None
) -> Branch:
    """The branch ending at `leaf_id`, or the one through `through_id` down to that message's most
    recently created descendant (a version with what followed it), by default the current one: the
    path to the session's most recently created message. Its newest `limit` messages. One query
    reads the session's (id, parent) pairs, walked here, and one more the path's rows (index
    chatmessage_session_time). InvalidRequest naming the parameter for an id not of the session."""
    pairs = list(ChatMessage.objects.filter(session=session).order_by("timestamp", "message_id").values_list("message_id", "parent_id"))
    parents = dict(pairs)
    children: dict[uuid.UUID | None, list[uuid.UUID]] = {}
    for message_id, parent_id in pairs:  # in creation order: each list oldest first
        children.setdefault(parent_id, []).append(message_id)
    for given, field in ((leaf_id, "leafMessageId"), (through_id, "throughMessageId")):
        if given is not None and given not in parents:
            raise InvalidRequest(f"{given} is not a message of this session", field=field)
    if not pairs:
        return Branch([], {}, None)
    if through_id is not None:
        leaf_id = _newest_descendant(through_id, children, {key: index for index, (key, _) in enumerate(pairs)})
    elif leaf_id is None:
        leaf_id = pairs[-1][0]
    path: list[uuid.UUID] = []
    step: uuid.UUID | None = leaf_id
    while step is not None and step in parents and len(path) <= len(parents):  # the bound: a cycle cannot loop
        path.append(step)
        step = parents[step]
    path.reverse()
    if limit is not None:
        path = path[-limit:]
    rows = ChatMessage.objects.in_bulk(path)
    return Branch([rows[key] for key in path if key in rows], {key: children[parents[key]] for key in path}, leaf_id)


def _newest_descendant(top: uuid.UUID, children: dict[uuid.UUID | None, list[uuid.UUID]], order: dict[uuid.UUID, int]) -> uuid.UUID:
    """The most recently created message under `top` (`top` itself when nothing follows it)."""
    newest, waiting, seen = top, [top], {top}
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in seen:  # a cycle in stored data cannot loop
                seen.add(child)
                waiting.append(child)
                if order[child] > order[newest]:
                    newest = child
    return newest


def branch_texts(*, leaf_id: uuid.UUID | None, limit: int) -> list[tuple[str, str]]:
    """(source, text) of the path from a session's start to `leaf_id`, its newest `limit`, oldest first:
    the history a turn gives the model (docs/api.md, "Branches"). One statement walking the parents
    by primary key, so a turn's cost does not grow with the session's other branches."""
    if leaf_id is None:
        return []
    connection = connections["default"]
    key = ChatMessage._meta.pk
    assert key is not None
    with connection.cursor() as cursor:
        cursor.execute(_branch_texts_sql(connection.vendor, limit), [key.get_db_prep_value(leaf_id, connection)])
        rows = cursor.fetchall()
    rows.reverse()
    return [(source, text) for source, text, _ in rows]


@functools.cache
def _branch_texts_sql(vendor: str, limit: int) -> str:
    table, column = db.sql_names(ChatMessage)
    key, parent, source, text = column("message_id"), column("parent"), column("source"), column("message")
    return (
        f"WITH RECURSIVE path (source, body, parent, depth) AS ("
        f"SELECT {source}, {text}, {parent}, 1 FROM {table} WHERE {key} = %s "
        f"UNION ALL SELECT m.{source}, m.{text}, m.{parent}, path.depth + 1 FROM {table} AS m "
        f"JOIN path ON m.{key} = path.parent WHERE path.depth < {int(limit)}) "
        f"SELECT source, body, depth FROM path ORDER BY depth"
    )


def session_answer(*, session_id: uuid.UUID, message_id: uuid.UUID, user_id: str) -> ChatMessage | None:
    """An assistant message of the user's session, or None (another user's alike)."""
    answers = ChatMessage.objects.filter(pk=message_id, session_id=session_id, session__user_id=user_id, source=MessageSource.ASSISTANT)
    return answers.first()


def is_session_answer(*, session_id: uuid.UUID, message_id: uuid.UUID) -> bool:
    """Whether `message_id` is an assistant message of the session: a primary-key read written out
    once, as the turn's other statements (a converse body's parentMessageId is checked with it)."""
    connection = connections["default"]
    key = ChatMessage._meta.pk
    assert key is not None
    params = [key.get_db_prep_value(message_id, connection), key.get_db_prep_value(session_id, connection)]
    with connection.cursor() as cursor:
        cursor.execute(_is_session_answer_sql(connection.vendor), params)
        return cursor.fetchone() is not None


@functools.cache
def _is_session_answer_sql(vendor: str) -> str:
    table, column = db.sql_names(ChatMessage)
    return (
        f"SELECT 1 FROM {table} WHERE {column('message_id')} = %s AND {column('session')} = %s "
        f"AND {column('source')} = '{MessageSource.ASSISTANT.value}'"
    )
