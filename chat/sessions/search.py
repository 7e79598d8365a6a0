"""Full-text search of a user's own conversations: their sessions' titles and messages (docs/api.md,
"Searching one's conversations").

The index is the database's own, created by migration 0015 on each vendor. SQLite: the FTS5 table
`chat_message_fts`, one row per message and per titled session, kept in step by triggers; its
`tags` column holds the owner's token (`owner_token`), so a query walks that user's postings only.
PostgreSQL: a generated `tsvector` column of the messages, holding their owner's token too
(`u<md5 of the user id>`), with a GIN index; the user's few titles matched as they are read. The
column is not a model field: the model also runs on SQLite.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from chat.sessions.models import ChatSession

MAX_TERMS = 8
SNIPPET_WORDS = 24
# \w as Python reads it; FTS5 and PostgreSQL split the same text into the same words or finer ones.
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class SearchHit:
    session_id: uuid.UUID
    title: str
    message_id: uuid.UUID | None  # None: the session's title matched
    snippet: str
    last_update: datetime


def search_words(query: str) -> list[str]:
    """The words a query searches for (every one must appear), lower-cased, at most MAX_TERMS."""
    return list(dict.fromkeys(_WORD.findall(query.lower())))[:MAX_TERMS]


def owner_token(user_id: str) -> str:
    """The token naming a user in the SQLite index: the triggers write it as `'u' || hex(user_id) || '0'`.
    One word for the tokenizer whatever the id holds; the final digit leaves it to no stemming rule."""
    return "u" + user_id.encode().hex() + "0"


def sessions_search(*, user_id: str, words: list[str], limit: int, chat_app_id: str | None = None) -> list[SearchHit]:
    """The user's messages and titles holding every word (in one chat app's sessions, given one), best
    match first; none without words (a query of punctuation only is well formed, and matches nothing)."""
    if not words:
        return []
    search = _postgresql if connection.vendor == "postgresql" else _sqlite
    sql, params = search(user_id, words, limit, chat_app_id)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [_hit(*row) for row in rows]


def _hit(session_id: object, title: str, message_id: object, snippet: str, last_update: object) -> SearchHit:
    field = ChatSession._meta.get_field("last_update")
    moment = last_update if isinstance(last_update, datetime) else field.to_python(last_update)
    return SearchHit(
        session_id=uuid.UUID(str(session_id)),
        title=title,
        message_id=uuid.UUID(str(message_id)) if message_id else None,
        snippet=" ".join(snippet.split()),
        last_update=moment,
    )


def _in_app(chat_app_id: str | None) -> tuple[str, list[Any]]:
    return (" AND s.chat_app_id = %s", [chat_app_id]) if chat_app_id else ("", [])


def _sqlite(user_id: str, words: list[str], limit: int, chat_app_id: str | None) -> tuple[str, list[Any]]:
    # Each word quoted (FTS5's syntax characters are data then); bm25 is lower-is-better, titles weigh double.
    # CROSS JOIN keeps the full-text match the outer loop; the user_id test restates what the tag ensures.
    in_app, app = _in_app(chat_app_id)
    terms = " AND ".join(f'"{word}"' for word in words)
    match = f'tags : "{owner_token(user_id)}" AND {{title body}} : ({terms})'
    sql = (
        "SELECT f.session_id, s.title, f.message_id, "
        f"CASE WHEN f.message_id = '' THEN s.title ELSE snippet(chat_message_fts, 2, '', '', '…', {SNIPPET_WORDS}) END, s.last_update "
        "FROM chat_message_fts AS f CROSS JOIN chat_chatsession AS s ON s.session_id = f.session_id "
        f"WHERE chat_message_fts MATCH %s AND s.user_id = %s{in_app} "
        "ORDER BY bm25(chat_message_fts, 0.0, 2.0, 1.0), s.last_update DESC LIMIT %s"
    )
    return sql, [match, user_id, *app, limit]


def _postgresql(user_id: str, words: list[str], limit: int, chat_app_id: str | None) -> tuple[str, list[Any]]:
    # The owner's token narrows the GIN scan to the user's messages (migration 0015); the rank reads the
    # words only, and an empty query (stop words alone) matches nothing, not all the user's messages.
    # Ranked and cut first; ts_headline, the costly part, only for the rows shown. Titles weigh double.
    # ts_rank_cd's flag 32 keeps ranks in [0, 1), so the two kinds compare.
    in_app, app = _in_app(chat_app_id)
    options = f'StartSel="", StopSel="", MaxWords={SNIPPET_WORDS}, MinWords={SNIPPET_WORDS // 3}, ShortWord=2'
    sql = (
        "WITH q AS (SELECT plainto_tsquery('english', %s) AS query, to_tsquery('simple', 'u' || md5(%s)) AS owner), "
        "hits AS ("
        "SELECT m.session_id, s.title, m.message_id, m.message AS text, s.last_update, ts_rank_cd(m.search, q.query, 32) AS score "
        "FROM q, chat_chatmessage AS m JOIN chat_chatsession AS s ON s.session_id = m.session_id "
        f"WHERE s.user_id = %s{in_app} AND m.search @@ (q.query && q.owner) AND m.search @@ q.query "
        "UNION ALL "
        "SELECT s.session_id, s.title, NULL, s.title, s.last_update, 2 * ts_rank_cd(to_tsvector('english', s.title), q.query, 32) "
        f"FROM q, chat_chatsession AS s WHERE s.user_id = %s{in_app} AND s.title <> '' AND to_tsvector('english', s.title) @@ q.query "
        "ORDER BY score DESC, last_update DESC LIMIT %s) "
        "SELECT h.session_id, h.title, h.message_id, "
        "CASE WHEN h.message_id IS NULL THEN h.title ELSE ts_headline('english', h.text, q.query, %s) END, h.last_update "
        "FROM hits AS h, q ORDER BY h.score DESC, h.last_update DESC"
    )
    return sql, [" ".join(words), user_id, user_id, *app, user_id, *app, limit, options]
