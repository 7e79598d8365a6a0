"""Reads on chat records."""

from __future__ import annotations

import functools
import uuid
from collections import namedtuple
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.files.storage import storages
from django.db import connections
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from agents.models import TestType
from chat import files as chat_files
from chat.features import resolve_features
from chat.models import (
    ApplyRulesAs,
    ChatApp,
    ChatFile,
    ChatMessage,
    ChatSession,
    ChatSessionFeedback,
    ChatUser,
    FeedbackComment,
    FeedbackStatus,
    SessionInsight,
)
from chat.serializers import INSIGHT_FACET_FILTERS, INSIGHT_SCORE_FILTERS, SESSION_SORT_FIELDS
from chatplatform import db
from chatplatform.api.errors import Code, InvalidRequest, NotFound, PermissionDenied
from chatplatform.api.pagination import decode_token, encode_token
from chatplatform.generations import LocalCopies

# The chat apps, agents and tools a turn reads (chat.turn.admission), kept per process: three queries
# were half of a turn's start. Any save or delete of one replaces the generation (chat/apps.py).
turn_definitions = LocalCopies("definitions:generation", lifetime=60.0)


def users_search(*, user_id_partial: str, limit: int) -> QuerySet[ChatUser]:
    """Users whose id starts with `user_id_partial`, case-insensitively (index: chatuser_userid_upper)."""
    users = ChatUser.objects.order_by("user_id")
    if user_id_partial:
        users = users.filter(user_id__istartswith=user_id_partial)
    return users[:limit]


def chat_app_get(*, chat_app_id: str) -> ChatApp:
    """The chat app, or 404 INVALID_CHAT_APP_ID."""
    app = ChatApp.objects.filter(chat_app_id=chat_app_id).first()
    if app is None:
        raise NotFound(f"chat app {chat_app_id} not found", code=Code.INVALID_CHAT_APP_ID)
    return app


def chat_apps_search(*, chat_app_ids: Iterable[str] | None) -> QuerySet[ChatApp]:
    """The chat apps with these ids (unknown ids are skipped), or every chat app; by chatAppId."""
    apps = ChatApp.objects.order_by("chat_app_id")
    if chat_app_ids is not None:
        apps = apps.filter(chat_app_id__in=list(chat_app_ids))
    return apps


def chat_app_usable_by(app: ChatApp, user: ChatUser) -> bool:
    """Whether `user` may use `app` (CONTRACT §5; converse answers 403 when not).

    The app must be enabled. A non-empty `userTypes` is a rule that holds when it contains the
    user's type; a non-empty `userRoles` one that holds when it shares a role with the user; an
    empty list sets no rule. `applyRulesAs: and` needs every rule set to hold, `or` any of them;
    no rule set lets everyone in. (An empty list does not "pass" under `or`: otherwise setting
    only `userRoles` with `or` would restrict nobody, which no operator means.)
    """
    if not app.enabled:
        return False
    rules = []
    if app.user_types:
        rules.append(user.user_type in app.user_types)
    if app.user_roles:
        rules.append(bool(set(app.user_roles) & set(user.roles or [])))
    if not rules:
        return True
    return any(rules) if app.apply_rules_as == ApplyRulesAs.OR else all(rules)


def chat_apps_for_user(*, user: ChatUser, chat_app_id: str | None = None, for_home_page: bool = False) -> list[ChatApp]:
    """The chat apps `user` may use, by chatAppId (index: chatapp_enabled).

    `chat_app_id` narrows to that one app; `for_home_page` leaves out test apps (testType mock).
    The type and role rules are JSON lists, so they are applied here rather than in SQL.
    """
    apps = ChatApp.objects.filter(enabled=True).order_by("chat_app_id")
    if chat_app_id:
        apps = apps.filter(chat_app_id=chat_app_id)
    if for_home_page:
        apps = apps.exclude(test_type=TestType.MOCK)
    return [app for app in apps if chat_app_usable_by(app, user)]


def chat_app_for_use(*, chat_app_id: str, user: ChatUser) -> ChatApp:
    """The chat app, when `user` may use it: 404 INVALID_CHAT_APP_ID, 403 INSUFFICIENT_PERMISSIONS otherwise."""
    app = chat_app_get(chat_app_id=chat_app_id)
    if not chat_app_usable_by(app, user):
        reason = "is disabled" if not app.enabled else "is not available to you"
        raise PermissionDenied(f"insufficient permissions: chat app {app.pk} {reason}")
    return app


def chat_app_features(app: ChatApp) -> dict[str, Any]:
    """The features in force in a chat app: the site's and the app's, resolved (CONTRACT §6)."""
    return resolve_features(site=settings.CHAT_SITE_FEATURES, app=app.features or {})


def user_get(*, user_id: str) -> ChatUser:
    """An existing user, or 404 NOT_FOUND (CONTRACT §4)."""
    user = ChatUser.objects.filter(user_id=user_id).first()
    if user is None:
        raise NotFound(f"user {user_id} not found")
    return user


# --- sessions, messages, feedback -------------------------------------------------------------


def session_uuid(session_id: Any) -> uuid.UUID:
    """`session_id` as the UUID it names; 404 INVALID_SESSION_ID when it cannot name a session."""
    try:
        return uuid.UUID(str(session_id))
    except (ValueError, TypeError, AttributeError):
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID) from None


def session_get(*, session_id: Any, user_id: str | None = None, chat_app_id: str | None = None) -> ChatSession:
    """The session, or 404 INVALID_SESSION_ID; with `user_id` (or `chat_app_id`) another user's
    (or app's) session is "not found" too, never a 403 that would confirm it exists (CONTRACT §3)."""
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
    """The list's query, written out once: Django takes longer to compile it than it runs."""
    table, column = db.sql_names(ChatSession)
    columns = ", ".join(
        column(ChatSession._meta.get_field(name.removesuffix("_id") if name == "user_id" else name).name) for name in _LISTED
    )
    where = f"{column('user')} = %s" + (f" AND {column('chat_app_id')} = %s" if in_chat_app else "")
    return f"SELECT {columns} FROM {table} WHERE {where} ORDER BY {column('create_date')} DESC LIMIT %s"


def _sessions_for_user(user_id: str, chat_app_id: str | None, limit: int) -> list[SessionRecord]:
    sql = _sessions_for_user_sql(connections["default"].vendor, bool(chat_app_id))
    params = [user_id, *([chat_app_id] if chat_app_id else []), limit]
    return [SessionRecord(*row) for row in db.select(ChatSession, _LISTED, sql, params)]


def sessions_for_user(*, user_id: str, chat_app_id: str | None, limit: int) -> list[SessionRecord]:
    """A user's sessions, newest first (indexes chatsession_user_created / chatsession_user_app_created),
    read on the database threads (GET /api/chat/sessions is a frontend's most frequent read)."""
    return db.call_on_db_thread(_sessions_for_user, user_id, chat_app_id, limit)


def session_messages(*, session: ChatSession, limit: int) -> list[ChatMessage]:
    """The newest `limit` messages, oldest first (CONTRACT §5; index chatmessage_session_time)."""
    newest = list(ChatMessage.objects.filter(session=session).order_by("-timestamp")[:limit])
    newest.reverse()
    return newest


def session_feedback(*, session: ChatSession) -> list[ChatSessionFeedback]:
    """A session's feedback, newest first, with its internal comments (index feedback_session_created)."""
    return list(ChatSessionFeedback.objects.filter(session=session).prefetch_related("internal_comments").order_by("-created_on"))


SESSION_SEARCH_TOKENS = "session-search"
OPEN_FEEDBACK = (FeedbackStatus.OPEN, FeedbackStatus.IN_REVIEW)  # a session with such feedback is `flagged`


@dataclass
class SessionSearch:
    """A session search (the reference's SessionSearchRequest), in plain JSON values so that a
    scrollId can carry it whole: a continuation may send the scrollId alone."""

    user_id: str = ""
    chat_app_id: str = ""
    session_id: str = ""
    custom_user_data: dict[str, str] = field(default_factory=dict)
    date_type: str = "created"
    date_from: str | None = None  # ISO 8601
    date_to: str | None = None
    date_to_inclusive: bool = True
    user_types: list[str] = field(default_factory=list)
    invocation_modes: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    flagged: bool | None = None
    insights: dict[str, Any] | None = None  # the validated `insights` object (wire names)
    feedback: dict[str, Any] = field(default_factory=dict)  # the validated feedback* filters (wire names)
    sort: list[tuple[str, str]] = field(default_factory=lambda: [("createDate", "desc")])

    @classmethod
    def from_request(cls, filters: dict[str, Any]) -> SessionSearch:
        """From SessionSearchFiltersSerializer's validated data."""
        dates = filters.get("dateFilter") or {}
        feedback_keys = [name for name in filters if name.startswith("feedback")]
        return cls(
            user_id=filters.get("userId") or "",
            chat_app_id=filters.get("chatAppId") or "",
            session_id=str(filters["sessionId"]) if filters.get("sessionId") else "",
            custom_user_data=dict(filters.get("customUserData") or {}),
            date_type=dates.get("dateType", "created"),
            date_from=_iso_or_none(dates.get("start")),
            date_to=_iso_or_none(dates.get("end")),
            date_to_inclusive=dates.get("endInclusive", True),
            user_types=sorted(set(filters.get("userType") or [])),
            invocation_modes=sorted(set(filters.get("invocationMode") or [])),
            statuses=sorted(set(filters.get("status") or [])),
            flagged=filters.get("flagged"),
            insights=_json_ready(filters["insights"]) if filters.get("insights") is not None else None,
            feedback={name: _json_ready(filters[name]) for name in sorted(feedback_keys) if filters[name] not in (None, "", [])},
            sort=[(item["field"], item["order"]) for item in filters.get("sortBy") or [{"field": "createDate", "order": "desc"}]],
        )

    def as_token(self) -> dict[str, Any]:
        return {**asdict(self), "sort": [list(key) for key in self.sort]}

    @classmethod
    def from_token(cls, data: Any) -> SessionSearch:
        try:
            return cls(**{**data, "sort": [tuple(key) for key in data["sort"]]})
        except (TypeError, KeyError, ValueError):
            raise InvalidRequest("is not a valid token from a previous response", field="scrollId") from None


def _json_ready(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({_json_ready(item) for item in value}) if all(isinstance(item, str) for item in value) else value
    return value


def _when(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


_SCORE_LOOKUPS = {"eq": "exact", "gte": "gte", "lte": "lte"}


# Below this many matches, a page is read from the filter's side and sorted, rather than by
# walking the sessions in order until enough match (which a rare match makes long).
SELECTIVE = 5000


def _session_filters(search: SessionSearch) -> Q:
    """The filters on the session row itself (and its user)."""
    condition = Q()
    if search.user_id:
        condition &= Q(user_id=search.user_id)
    if search.chat_app_id:
        condition &= Q(chat_app_id=search.chat_app_id)
    if search.session_id:
        condition &= Q(session_id=search.session_id)
    users = Q()
    for key, value in search.custom_user_data.items():
        users &= Q(**{f"custom_data__{key}": value})
    if search.user_types:
        users &= Q(user_type__in=search.user_types)
    if users != Q():
        # The matching users first: a few are passed as a list, so that their sessions are read by
        # index chatsession_user_created (as a subquery the planner walks all sessions instead).
        matching = ChatUser.objects.filter(users).values_list("pk", flat=True)
        few = list(matching[: SELECTIVE + 1])
        condition &= Q(user_id__in=few if len(few) <= SELECTIVE else matching)
    if search.invocation_modes:
        condition &= Q(invocation_mode__in=search.invocation_modes)
    if search.statuses:
        condition &= Q(status__in=search.statuses)
    if search.date_type in ("created", "updated"):
        column = "create_date" if search.date_type == "created" else "last_update"
        start, end = _when(search.date_from), _when(search.date_to)
        if start is not None:
            condition &= Q(**{f"{column}__gte": start})
        if end is not None:
            condition &= Q(**{f"{column}__{'lte' if search.date_to_inclusive else 'lt'}": end})
    return condition


def _insight_filters(insights: dict[str, Any], *, prefix: str) -> Q | None:
    """`insights` as a condition on the SessionInsight fields under `prefix` ("insight__" from a
    session, "" on the insight table); None when it matches nothing (no record, yet criteria)."""
    if not insights["hasInsights"]:
        # No valid record: the other insight filters cannot match then.
        return None if len(insights) > 1 else ~Q(**{f"{prefix}generated_at__isnull": False})
    condition = Q(**{f"{prefix}generated_at__isnull": False})
    for name, column in INSIGHT_SCORE_FILTERS.items():
        if name in insights:
            wanted = insights[name]
            condition &= Q(**{f"{prefix}{column}__{_SCORE_LOOKUPS[wanted['operator']]}": wanted["score"]})
    for name, (column, _values) in INSIGHT_FACET_FILTERS.items():
        if insights.get(name):
            condition &= Q(**{f"{prefix}{column}__in": insights[name]})
    return condition


def _feedback_records(search: SessionSearch) -> QuerySet[ChatSessionFeedback] | None:
    """The feedback records meeting every feedback filter (one record meets them all), or None
    without feedback filters. Indexes feedback_*_session, comment_*_feedback."""
    wanted = search.feedback
    records = ChatSessionFeedback.objects.all()
    used = False
    for name, lookup in (
        ("feedbackInStatus", "status__in"),
        ("feedbackSeverity", "severity__in"),
        ("feedbackType", "type__in"),
        ("feedbackUserId", "user_id"),
        ("feedbackReportedByHuman", "reported_by_human"),
        ("feedbackCreatedByCustomer", "created_by_customer"),
    ):
        if name in wanted:
            records, used = records.filter(**{lookup: wanted[name]}), True
    if search.date_type == "feedback" and (search.date_from or search.date_to):
        if search.date_from:
            records = records.filter(created_on__gte=_when(search.date_from))
        if search.date_to:
            records = records.filter(**{f"created_on__{'lte' if search.date_to_inclusive else 'lt'}": _when(search.date_to)})
        used = True
    comments = FeedbackComment.objects.filter(feedback=OuterRef("pk"))
    commented = False
    for name, lookup in (
        ("feedbackInternalCommentType", "type__in"),
        ("feedbackInternalCommentStatus", "status__in"),
        ("feedbackInternalCommentUserId", "user_id"),
    ):
        if name in wanted:
            comments, commented = comments.filter(**{lookup: wanted[name]}), True
    if commented:
        records, used = records.filter(Exists(comments)), True
    return records if used else None


def _filtered(search: SessionSearch) -> QuerySet[ChatSession]:
    """The sessions matching every filter of `search` (unordered)."""
    sessions = ChatSession.objects.filter(_session_filters(search))
    if search.flagged is not None:
        flagged = Exists(ChatSessionFeedback.objects.filter(session=OuterRef("pk"), status__in=OPEN_FEEDBACK))
        sessions = sessions.filter(flagged if search.flagged else ~flagged)
    if search.insights is not None:
        insight = _insight_filters(search.insights, prefix="insight__")
        sessions = sessions.none() if insight is None else sessions.filter(insight)
    records = _feedback_records(search)
    if records is not None:
        sessions = sessions.filter(Exists(records.filter(session=OuterRef("pk"))))
    return sessions


def _session_ids_from_filter_side(search: SessionSearch) -> QuerySet[Any] | None:
    """When every filter is on insights, or on feedback (or `flagged: true`), the matching session
    ids read from that side alone: counting them there skips the join with a million sessions."""
    if _session_filters(search) != Q():
        return None
    records = _feedback_records(search)
    sides = [search.insights is not None, records is not None or search.flagged is not None]
    if sum(sides) != 1 or search.flagged is False or (search.insights or {}).get("hasInsights") is False:
        return None
    if search.insights is not None:
        condition = _insight_filters(search.insights, prefix="")
        return SessionInsight.objects.filter(condition).values("session_id") if condition is not None else None
    if records is not None and search.flagged:
        return None  # two conditions on possibly different feedback records: the general count
    records = records if records is not None else ChatSessionFeedback.objects.filter(status__in=OPEN_FEEDBACK)
    return records.values("session_id").distinct()


def _sort_keys(search: SessionSearch) -> list[tuple[str, bool]]:
    """(model path, descending) per sort key, session_id last as the tie-break."""
    keys = [(SESSION_SORT_FIELDS[name], order == "desc") for name, order in search.sort]
    if not any(path == "session_id" for path, _ in keys):
        keys.append(("session_id", keys[-1][1]))
    return keys


_NULLABLE_SORT = SESSION_SORT_FIELDS["insightGoalAchievementScore"]


def _order(path: str, descending: bool, search: SessionSearch) -> Any:
    if path == _NULLABLE_SORT and not (search.insights or {}).get("hasInsights"):
        # Sessions without insights sort after every score, whichever the direction. (With
        # hasInsights every row has a score: the plain order, which the insight_goal index serves.)
        return F(path).desc(nulls_last=True) if descending else F(path).asc(nulls_last=True)
    return F(path).desc() if descending else F(path).asc()  # as the indexes order them


def _after(keys: list[tuple[str, bool]], values: list[Any]) -> Q:
    """The rows after the one whose sort values are `values`, in the order of `keys` (keyset)."""
    after = Q(pk__in=[])
    equal = Q()
    for (path, descending), value in zip(keys, values, strict=True):
        if value is None:  # in the nulls, which come last: only ties on this key can follow
            equal &= Q(**{f"{path}__isnull": True})
            continue
        beyond = Q(**{f"{path}__{'lt' if descending else 'gt'}": value})
        if path == _NULLABLE_SORT:
            beyond |= Q(**{f"{path}__isnull": True})
        after |= equal & beyond
        equal &= Q(**{path: value})
    return after


def _sort_value(session: ChatSession, path: str) -> Any:
    if path == _NULLABLE_SORT:
        return session.sort_insight_score
    value = getattr(session, path)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _parse_sort_value(path: str, value: Any) -> Any:
    if value is None:
        return None
    if path in ("create_date", "last_update"):
        return datetime.fromisoformat(value)
    if path == "session_id":
        return uuid.UUID(value)
    return value


def search_count_query(search: SessionSearch) -> QuerySet[Any]:
    """What the total counts: the session ids on the filtering side when one side filters alone."""
    from_filter_side = _session_ids_from_filter_side(search)
    return from_filter_side if from_filter_side is not None else _filtered(search)


def search_page_query(search: SessionSearch, *, total: int) -> QuerySet[ChatSession]:
    """The matching sessions in the search's order (page it with `_after` and a slice). A selective
    filter (at most SELECTIVE matches) reads its few sessions by id from its side."""
    from_filter_side = _session_ids_from_filter_side(search)
    if from_filter_side is not None and total <= SELECTIVE:
        sessions = ChatSession.objects.filter(pk__in=list(from_filter_side.values_list("session_id", flat=True)))
    else:
        sessions = _filtered(search)
    keys = _sort_keys(search)
    if any(path.startswith("insight__") for path, _ in keys):
        sessions = sessions.annotate(sort_insight_score=F(SESSION_SORT_FIELDS["insightGoalAchievementScore"]))
    return sessions.order_by(*(_order(path, descending, search) for path, descending in keys))


def sessions_search(*, search: SessionSearch | None, size: int, scroll_id: Any) -> tuple[list[ChatSession], int, str | None, SessionSearch]:
    """A page of the admin session search, the total matching, the next page's scrollId, and the
    search it ran (the one the scrollId carries when the request sent none).

    Keyset pages on the sort keys and session_id, so sessions started meanwhile neither repeat nor
    skip rows. The token is signed and carries the search; a token sent with other filters is a 400.
    Indexes: chatsession_* (filters and sorts), insight_* (insight filters), feedback_* and
    comment_* (feedback filters, through EXISTS)."""
    position = decode_token(scroll_id, kind=SESSION_SEARCH_TOKENS, field="scrollId")
    if position is not None:
        carried = SessionSearch.from_token(position.get("search"))
        if search is not None and search.as_token() != carried.as_token():
            raise InvalidRequest("belongs to another search (its filters differ)", field="scrollId")
        search = carried
    search = search or SessionSearch()
    carried = position.get("total") if position is not None else None  # counted for the first page
    total = carried if isinstance(carried, int) else search_count_query(search).count()
    keys = _sort_keys(search)
    sessions = search_page_query(search, total=total)
    if position is not None:
        try:
            values = [_parse_sort_value(path, value) for (path, _), value in zip(keys, position["after"], strict=True)]
        except (KeyError, TypeError, ValueError):
            raise InvalidRequest("is not a valid token from a previous response", field="scrollId") from None
        sessions = sessions.filter(_after(keys, values))
    page = list(sessions[: size + 1])
    if len(page) <= size:
        return page, total, None, search
    page = page[:size]
    after = [_sort_value(page[-1], path) for path, _ in keys]
    token = encode_token({"search": search.as_token(), "after": after, "total": total}, kind=SESSION_SEARCH_TOKENS)
    return page, total, token, search


def sessions_extras(sessions: list[ChatSession], *, insights: bool, feedback: bool) -> dict[uuid.UUID, dict[str, Any]]:
    """For `includeInsights` / `includeFeedback`: per session, its insights record and its feedback."""
    extras: dict[uuid.UUID, dict[str, Any]] = {session.pk: {} for session in sessions}
    ids = list(extras)
    if insights:
        found = {row.pk: row for row in SessionInsight.objects.filter(pk__in=ids, generated_at__isnull=False)}
        for pk in ids:
            extras[pk]["insights"] = found.get(pk)
    if feedback:
        for pk in ids:
            extras[pk]["feedback"] = []
        for record in ChatSessionFeedback.objects.filter(session_id__in=ids).prefetch_related("internal_comments").order_by("-created_on"):
            extras[record.session_id]["feedback"].append(record)
    return extras


def _iso_or_none(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# --- files attached to messages (issue 21) ---------------------------------------------------------


def file_get(*, file_id: Any, user: ChatUser) -> ChatFile:
    """The user's own file; anyone else's, like an unknown id, is 404 NOT_FOUND (never readable)."""
    try:
        pk = uuid.UUID(str(file_id))
    except ValueError:
        raise NotFound(f"file {file_id} not found") from None
    file = ChatFile.objects.filter(pk=pk, user=user).first()
    if file is None:
        raise NotFound(f"file {file_id} not found")
    return file


def message_files(*, user: ChatUser, files: list[Any], features: dict[str, Any]) -> list[ChatFile]:
    """The stored files a converse body's `files` name, checked for the turn.

    `files` is the body's list of ChatMessageFile (only `fileId` is read; the rest is what the
    client was given at upload, and the stored record wins). `features` are the chat app's
    resolved features. 400 when upload is off there, an entry has no valid `fileId`, a file is
    named twice, or its type is no longer allowed; 404 NOT_FOUND for an unknown file or another
    user's. Returns them in the body's order; `ChatFile.as_message_file()` is what the message stores.
    """
    if not files:
        return []
    enabled, allowed = chat_files.file_upload_settings(features)
    if not enabled:
        raise InvalidRequest("file upload is not enabled in this chat app", field="files")
    ids: list[uuid.UUID] = []
    for index, entry in enumerate(files):
        raw = entry.get("fileId") if isinstance(entry, dict) else None
        try:
            ids.append(uuid.UUID(raw))
        except (ValueError, TypeError, AttributeError):  # not a string, or not a UUID
            raise InvalidRequest("must be the fileId of an uploaded file", field=f"files[{index}].fileId") from None
        if ids[-1] in ids[:-1]:
            raise InvalidRequest(f"names file {raw} a second time", field=f"files[{index}]")
    stored = {file.pk: file for file in ChatFile.objects.filter(pk__in=ids, user=user)}
    for index, pk in enumerate(ids):
        file = stored.get(pk)
        if file is None:
            raise NotFound(f"files[{index}]: file {pk} not found")
        if not chat_files.is_allowed(file.mime_type, allowed):
            raise InvalidRequest(f"{file.mime_type} files are not allowed in this chat app", field=f"files[{index}]")
    return [stored[pk] for pk in ids]


def file_content(file: ChatFile) -> bytes:
    """The file's bytes, from the `chat_files` storage."""
    with storages["chat_files"].open(file.storage_name, "rb") as stored:
        return stored.read()


def file_model_input(file: ChatFile) -> chat_files.ModelInput:
    """The file as a model receives it: text as text, images as image input (chat.files.ModelInput)."""
    return chat_files.model_input(file_name=file.name, mime_type=file.mime_type, content=file_content(file))


def session_insight(*, session: ChatSession) -> SessionInsight | None:
    """The session's analysis row (its record, and where the analysis stands), if any."""
    return SessionInsight.objects.filter(pk=session.pk).first()
