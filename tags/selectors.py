"""Reads of tag definitions: the two searches, and which tags a chat app's model may use."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from chatplatform.api.errors import InvalidRequest
from chatplatform.api.pagination import decode_token, encode_token
from chatplatform.api.views import encode_ok
from tags import cache
from tags.instructions import instruction_text
from tags.models import TagDefinition, TagStatus, UsageMode
from tags.serializers import render_many

PAGE_SIZE = 100  # docs/api.md, "Limits": tag definition search page
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


def _keyset(rows: QuerySet[TagDefinition], after: tuple[str, str] | None) -> QuerySet[TagDefinition]:
    if after is None:
        return rows
    scope, tag = after
    # `scope >= s` lets the database range-scan the index; the OR then skips the rows of s up to t.
    return rows.filter(scope__gte=scope).filter(Q(scope__gt=scope) | Q(tag__gt=tag))


def tags_admin_search(*, pagination_token: Any = None) -> Page:
    """Every definition, any status, by (scope, tag); keyset pagination on the unique index."""
    rows = _keyset(TagDefinition.objects.order_by("scope", "tag"), _after(pagination_token, ADMIN_TOKENS))
    return _page(list(rows[: PAGE_SIZE + 1]), ADMIN_TOKENS)


def tags_enabled_search(*, pagination_token: Any = None, include_instructions: bool) -> bytes:
    """The chat search's answer: `status: enabled` only, by (scope, tag) (index tagdef_status_scope_tag).

    Each page is kept in the tag cache as its encoded answer (a hit is one cache read, nothing
    decoded), except a page holding a `dontCacheThis` definition (docs/api.md, "Limits"), which is read
    from the database every time.
    """
    after = _after(pagination_token, CHAT_TOKENS)

    def compute() -> tuple[bytes, bool]:
        """The encoded answer, and whether it may be cached (no `dontCacheThis` on the page)."""
        rows = _keyset(TagDefinition.objects.filter(status=TagStatus.ENABLED).order_by("scope", "tag"), after)
        page = _page(list(rows[: PAGE_SIZE + 1]), CHAT_TOKENS)
        body = encode_ok(**page_fields(render_many(page.definitions, include_instructions=include_instructions), page.pagination_token))
        return body, not any(row.dont_cache_this for row in page.definitions)

    position = ".".join(after) if after else "first"  # scope and tag hold no "." (their character rule)
    body, _ = cache.cached(f"chat-search:{position}:{include_instructions}", compute, keep=lambda value: value[1])
    return body


def page_fields(definitions: list[dict[str, Any]], pagination_token: str | None) -> dict[str, Any]:
    """A search answer's fields: the page, and the token only when a next page exists."""
    fields: dict[str, Any] = {"tagDefinitions": definitions}
    if pagination_token:
        fields["paginationToken"] = pagination_token
    return fields


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
    """The tags a chat app may use (docs/api.md, "Tag definitions"): `tags.enabled` both
    site-wide and in the app; never one in the site's `tagsProhibited`; only `status: enabled`;
    `global` tags unless in the app's `tagsDisabled`; `chat-app` tags only in the app's `tagsEnabled`."""
    site, app = _tags_feature(site_features), _tags_feature(app_features)
    if site.get("enabled") is not True or app.get("enabled") is not True:
        return []
    prohibited = _references(site.get("tagsProhibited"))
    disabled = _references(app.get("tagsDisabled"))
    enabled = _references(app.get("tagsEnabled"))
    usable = []
    for definition in TagDefinition.objects.filter(status=TagStatus.ENABLED).order_by("scope", "tag"):
        key = (definition.scope, definition.tag)
        if key in prohibited:
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
    """The tag instructions of a chat app's system prompt (docs/api.md, "The system prompt"): for each usable tag the
    model may emit inline, its Markdown instructions inside `<tag-instructions type="scope.tag">`,
    separated by blank lines. Empty when there is none.

    Kept in the tag cache per tags configuration (a turn reads it on every message), unless one of
    the definitions it uses is `dontCacheThis`.
    """

    def compute() -> tuple[str, bool]:
        parts, cacheable = [], True
        for definition in tags_usable_by(site_features=site_features, app_features=app_features):
            if not definition.can_be_generated_by_llm or not context_enabled(definition, "inline"):
                continue
            cacheable = cacheable and not definition.dont_cache_this
            text = instruction_text(definition)
            if text:
                parts.append(f'<tag-instructions type="{definition.scope}.{definition.tag}">\n{text}\n</tag-instructions>')
        return "\n\n".join(parts), cacheable

    text, _ = cache.cached(f"instructions:{_fingerprint(site_features, app_features)}", compute, keep=lambda value: value[1])
    return text


def tags_for_tools(*, site_features: dict[str, Any], app_features: dict[str, Any]) -> frozenset[str]:
    """The `scope.tag` references tools may emit in a chat app: usable there and
    `canBeGeneratedByTool`. Cached like `instructions_for`: a turn reads it every time."""

    def compute() -> tuple[list[str], bool]:
        usable = [d for d in tags_usable_by(site_features=site_features, app_features=app_features) if d.can_be_generated_by_tool]
        return [f"{d.scope}.{d.tag}" for d in usable], not any(d.dont_cache_this for d in usable)

    references, _ = cache.cached(f"tool-tags:{_fingerprint(site_features, app_features)}", compute, keep=lambda value: value[1])
    return frozenset(references)


def _fingerprint(site_features: dict[str, Any], app_features: dict[str, Any]) -> str:
    """A cache key part for the tags configuration of a site and a chat app."""
    site, app = _tags_feature(site_features), _tags_feature(app_features)
    return hashlib.sha256(json.dumps([site, app], sort_keys=True, default=str).encode()).hexdigest()
