"""Reads of tag definitions: the two searches, and which tags a chat app's model may use."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from chatplatform.api.errors import InvalidRequest
from chatplatform.api.pagination import decode_token, encode_token
from tags import cache
from tags.instructions import instruction_text
from tags.models import TagDefinition, TagStatus, UsageMode

PAGE_SIZE = 100  # SPEC.md Limits: tag definition search page
ADMIN_TOKENS = "tagdef-admin"
CHAT_TOKENS = "tagdef-chat"


@dataclass(frozen=True, slots=True)
class Page:
    definitions: list[TagDefinition]
    pagination_token: str | None  # None on the last page


def _after(token: Any, kind: str) -> tuple[str, str] | None:
    position = decode_token(token, kind=kind)
    if position is None:
        return None
    scope, tag = position.get("scope"), position.get("tag")
    if not isinstance(scope, str) or not isinstance(tag, str):
        raise InvalidRequest("is not a valid token from a previous response", field="paginationToken")
    return scope, tag


def _page(rows: list[TagDefinition], kind: str) -> Page:
    """`rows` holds up to one row more than a page: its presence is what says a next page exists."""
    if len(rows) <= PAGE_SIZE:
        return Page(rows, None)
    last = rows[PAGE_SIZE - 1]
    return Page(rows[:PAGE_SIZE], encode_token({"scope": last.scope, "tag": last.tag}, kind=kind))


def tags_admin_search(*, pagination_token: Any = None) -> Page:
    """Every definition, any status, by (scope, tag); keyset pagination on the unique index."""
    rows = TagDefinition.objects.order_by("scope", "tag")
    after = _after(pagination_token, ADMIN_TOKENS)
    if after is not None:
        scope, tag = after
        # `scope >= s` lets the database range-scan the index; the OR then skips the rows of s up to t.
        rows = rows.filter(scope__gte=scope).filter(Q(scope__gt=scope) | Q(tag__gt=tag))
    return _page(list(rows[: PAGE_SIZE + 1]), ADMIN_TOKENS)


def _sort_key(definition: TagDefinition) -> tuple[str, str]:
    return definition.scope, definition.tag


def _load_enabled() -> dict[str, Any]:
    rows = sorted(TagDefinition.objects.filter(status=TagStatus.ENABLED), key=_sort_key)
    return {
        "rows": [row for row in rows if not row.dont_cache_this],
        "has_uncached": any(row.dont_cache_this for row in rows),
    }


def enabled_tag_definitions() -> list[TagDefinition]:
    """Every `status: enabled` definition, by (scope, tag), from the tag cache.

    Definitions with `dontCacheThis` are never kept in the cache: when any exists, they are read
    from the database on each call (SPEC.md Limits). Sorted in Python, so the chat search's keyset
    order is the same whichever collation the database uses.
    """
    entry = cache.cached("enabled", _load_enabled)
    if not entry["has_uncached"]:
        return list(entry["rows"])
    fresh = list(TagDefinition.objects.filter(status=TagStatus.ENABLED, dont_cache_this=True))
    return sorted([*entry["rows"], *fresh], key=_sort_key)


def tags_enabled_search(*, pagination_token: Any = None) -> Page:
    """The chat search: `status: enabled` only, by (scope, tag), served from the tag cache."""
    rows = enabled_tag_definitions()
    after = _after(pagination_token, CHAT_TOKENS)
    start = bisect_right([_sort_key(row) for row in rows], after) if after is not None else 0
    return _page(rows[start : start + PAGE_SIZE + 1], CHAT_TOKENS)


def _tags_feature(features: Any) -> dict[str, Any]:
    section = features.get("tags") if isinstance(features, dict) else None
    return section if isinstance(section, dict) else {}


def _references(entries: Any) -> set[tuple[str, str]]:
    """`{tag, scope}` entries as (scope, tag) pairs; malformed entries name no tag."""
    if not isinstance(entries, list):
        return set()
    return {
        (entry["scope"], entry["tag"])
        for entry in entries
        if isinstance(entry, dict) and isinstance(entry.get("scope"), str) and isinstance(entry.get("tag"), str)
    }


def tags_usable_by(*, site_features: dict[str, Any], app_features: dict[str, Any]) -> list[TagDefinition]:
    """The tags a chat app may use (CONTRACT §6, SPEC.md's stricter rule): `tags.enabled` both
    site-wide and in the app; never one in the site's `tagsProhibited`; only `status: enabled`;
    `global` tags unless in the app's `tagsDisabled`; `chat-app` tags only in the app's `tagsEnabled`."""
    site, app = _tags_feature(site_features), _tags_feature(app_features)
    if site.get("enabled") is not True or app.get("enabled") is not True:
        return []
    prohibited = _references(site.get("tagsProhibited"))
    disabled = _references(app.get("tagsDisabled"))
    enabled = _references(app.get("tagsEnabled"))
    usable = []
    for definition in enabled_tag_definitions():
        key = _sort_key(definition)
        if definition.status != TagStatus.ENABLED or key in prohibited:
            continue
        if (definition.usage_mode == UsageMode.GLOBAL and key not in disabled) or (
            definition.usage_mode == UsageMode.CHAT_APP and key in enabled
        ):
            usable.append(definition)
    return usable


def context_enabled(definition: TagDefinition, context: str) -> bool:
    config = (definition.rendering_contexts or {}).get(context)
    return config is True or (isinstance(config, dict) and config.get("enabled") is True)


def instructions_for(*, site_features: dict[str, Any], app_features: dict[str, Any]) -> str:
    """The tag instructions of a chat app's system prompt (CONTRACT §7): for each usable tag the
    model may emit inline, its Markdown instructions inside `<tag-instructions type="scope.tag">`,
    separated by blank lines. Empty when there is none."""
    parts = []
    for definition in tags_usable_by(site_features=site_features, app_features=app_features):
        if not definition.can_be_generated_by_llm or not context_enabled(definition, "inline"):
            continue
        text = instruction_text(definition)
        if text:
            parts.append(f'<tag-instructions type="{definition.scope}.{definition.tag}">\n{text}\n</tag-instructions>')
    return "\n\n".join(parts)
