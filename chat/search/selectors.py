"""Session search (docs/api.md, "Session search"): filters over sessions, their feedback and
insights, sorted and scrolled by signed keyset tokens."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Exists, F, OuterRef, Q, QuerySet

from chat.feedback.models import ChatSessionFeedback, FeedbackComment, FeedbackStatus
from chat.insights.models import SessionInsight
from chat.search.serializers import INSIGHT_FACET_FILTERS, INSIGHT_SCORE_FILTERS, SESSION_SORT_FIELDS
from chat.sessions.models import ChatSession
from chat.users.models import ChatUser
from chatplatform.api.errors import InvalidRequest
from chatplatform.api.pagination import decode_token, encode_token

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
        return session.sort_insight_score  # type: ignore[attr-defined]  # annotated by the search's query
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
    counted = position.get("total") if position is not None else None  # counted for the first page
    total = counted if isinstance(counted, int) else search_count_query(search).count()
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
