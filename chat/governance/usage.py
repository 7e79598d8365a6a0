"""Usage limits (docs/api.md, "Usage limits"): the `usageLimits` feature, site-wide and per chat
app, per user, daily (UTC day) and monthly (calendar month, UTC), in tokens and in dollars.

A turn's admission calls `usage_check` before any model is called: one indexed read of the user's
counters, and none when no limit applies. A turn's answer is stored with `usage_count`, one upsert
that adds its usage to the four counters it moves (today and this month, in its chat app and
site-wide) atomically, so every process sees the same sums. A turn already running may finish past
a limit; the next one is refused.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.db import connections
from django.utils import timezone

from chat.governance.models import SITE, UsageCounter, UsagePeriod
from chatplatform import db
from chatplatform.api.errors import Code, RateLimited

PERIODS = {"daily": UsagePeriod.DAY, "monthly": UsagePeriod.MONTH}


@dataclass(frozen=True)
class Limit:
    """One limit in force: `scope` is SITE ("") for the site-wide feature, else the chat app's id."""

    scope: str
    period: str  # daily | monthly
    tokens: int | None
    cost_usd: float | None

    @property
    def chat_app_id(self) -> str | None:
        return None if self.scope == SITE else self.scope


@dataclass(frozen=True)
class PeriodUsage:
    """A user's usage in one period, the limits in force and when the period resets."""

    tokens: int
    cost_usd: float
    limits: list[Limit]
    resets_at: datetime


@dataclass(frozen=True)
class UsageSummary:
    daily: PeriodUsage
    monthly: PeriodUsage


class UsageLimitExceeded(RateLimited):
    """429 USAGE_LIMIT_EXCEEDED: the message names the limit and its reset; Retry-After until then."""

    code = Code.USAGE_LIMIT_EXCEEDED

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(retry_after)
        self.detail = self.message = message  # type: ignore[assignment]  # the handler renders the detail as text
        self.code = Code.USAGE_LIMIT_EXCEEDED


def _limits_of(feature: Any, scope: str) -> list[Limit]:
    if not (isinstance(feature, dict) and feature.get("enabled") is True):
        return []
    limits = []
    for period, measures in (feature.get("perUser") or {}).items():
        tokens, cost = (measures or {}).get("tokens"), (measures or {}).get("costUsd")
        if tokens is not None or cost is not None:
            limits.append(Limit(scope, period, tokens, cost))
    return limits


def limits_for(*, app_features: dict[str, Any], chat_app_id: str) -> list[Limit]:
    """Every limit in force for a turn in this chat app: the site's (counted across all chat apps)
    and the chat app's own (counted in it). Read from the configurations as written, never from a
    request's narrowed features: a client cannot switch a limit off."""
    return [*_limits_of(settings.CHAT_SITE_FEATURES.get("usageLimits"), SITE), *_limits_of(app_features.get("usageLimits"), chat_app_id)]


def period_starts(now: datetime) -> dict[str, date]:
    today = now.astimezone(UTC).date()
    return {"daily": today, "monthly": today.replace(day=1)}


def resets_at(period: str, start: date) -> datetime:
    """When a period's counters start again from zero: the next UTC midnight, or the next month's first."""
    following = start + timedelta(days=1) if period == "daily" else (start.replace(day=28) + timedelta(days=4)).replace(day=1)
    return datetime.combine(following, time.min, tzinfo=UTC)


def _counters(*, user_id: str, scopes: set[str], now: datetime) -> dict[tuple[str, str], tuple[int, float]]:
    """(period, scope) → (tokens, costUsd) of the user's counters of today and this month: one indexed read."""
    starts = period_starts(now)
    rows = UsageCounter.objects.filter(user_id=user_id, period_start__in=set(starts.values()), chat_app_id__in=scopes)
    found = {}
    for period, start, scope, tokens, cost in rows.values_list("period", "period_start", "chat_app_id", "tokens", "cost_usd"):
        name = "daily" if period == UsagePeriod.DAY else "monthly"
        if starts[name] == start:
            found[(name, scope)] = (tokens, cost)
    return found


def usage_check(*, user_id: str, limits: list[Limit], now: datetime | None = None) -> None:
    """Refuse (UsageLimitExceeded) when the user has reached any of `limits`; nothing read without one."""
    if not limits:
        return
    now = now or timezone.now()
    counters = _counters(user_id=user_id, scopes={limit.scope for limit in limits}, now=now)
    starts = period_starts(now)
    reached = []
    for limit in limits:
        tokens, cost = counters.get((limit.period, limit.scope), (0, 0.0))
        if limit.tokens is not None and tokens >= limit.tokens:
            reached.append((limit, f"{limit.tokens} tokens", f"{tokens} used"))
        if limit.cost_usd is not None and cost >= limit.cost_usd:
            reached.append((limit, f"${limit.cost_usd:g}", f"${cost:.4f} used"))
    if not reached:
        return
    # Until the last of them resets: only then would a turn be admitted again.
    limit, amount, used = max(reached, key=lambda item: resets_at(item[0].period, starts[item[0].period]))
    reset = resets_at(limit.period, starts[limit.period])
    where = "across all chat apps" if limit.scope == SITE else f"in chat app {limit.scope}"
    message = (
        f"usage limit exceeded: the {limit.period} limit of {amount} {where} is reached ({used}); "
        f"it resets at {reset.strftime('%Y-%m-%dT%H:%M:%SZ')}"
    )
    raise UsageLimitExceeded(message, retry_after=max(1, math.ceil((reset - now).total_seconds())))


def usage_count(*, user_id: str, chat_app_id: str, usage: dict[str, Any], now: datetime | None = None) -> None:
    """Add a turn's usage (ChatMessageUsage) to the user's counters of today and this month, in its
    chat app and site-wide: one upsert whose increments are atomic in the database."""
    tokens, cost = int(usage.get("totalTokens") or 0), float(usage.get("totalCost") or 0.0)
    if not tokens and not cost:
        return
    starts = period_starts(now or timezone.now())
    params: list[Any] = []
    for name, start in starts.items():
        for scope in (SITE, chat_app_id):
            params += [user_id, scope, PERIODS[name].value, start.isoformat(), tokens, cost]
    with db.cursor(connections["default"]) as cursor:
        cursor.execute(_upsert_sql(connections["default"].vendor), params)


@functools.cache
def _upsert_sql(vendor: str) -> str:
    """INSERT … ON CONFLICT DO UPDATE with increments (SQLite ≥ 3.24 and PostgreSQL alike): no
    read-modify-write, so two processes adding at once both count."""
    table, column = db.sql_names(UsageCounter)
    names = [column(name) for name in ("user", "chat_app_id", "period", "period_start", "tokens", "cost_usd")]
    key = ", ".join(column(name) for name in ("user", "period_start", "period", "chat_app_id"))
    tokens, cost = column("tokens"), column("cost_usd")
    rows = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * 4)
    return (
        f"INSERT INTO {table} ({', '.join(names)}) VALUES {rows} ON CONFLICT ({key}) DO UPDATE SET "
        f"{tokens} = {table}.{tokens} + excluded.{tokens}, {cost} = {table}.{cost} + excluded.{cost}"
    )


def usage_summary(*, user_id: str, chat_app_id: str | None, limits: list[Limit], now: datetime | None = None) -> UsageSummary:
    """GET /api/chat/user/usage: per period the user's usage (in the chat app, or across all without
    one), the limits in force and when the period resets."""
    now = now or timezone.now()
    scope = chat_app_id or SITE
    counters = _counters(user_id=user_id, scopes={scope, SITE}, now=now)
    starts = period_starts(now)
    periods = {}
    for period in PERIODS:
        tokens, cost = counters.get((period, scope), (0, 0.0))
        in_force = [limit for limit in limits if limit.period == period]
        periods[period] = PeriodUsage(tokens, round(cost, 10), in_force, resets_at(period, starts[period]))
    return UsageSummary(**periods)
