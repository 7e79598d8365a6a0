"""Writes of tag definitions. Every one is atomic and invalidates the tag cache.

Callers pass definitions already validated by `tags.serializers.TagDefinitionSerializer`
(model field names), so the API, the IaC batch and the Django admin share one set of rules.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from chatplatform import audit
from chatplatform.api.errors import NotFound
from tags import cache
from tags.models import TagDefinition, TagStatus

logger = logging.getLogger("tags")

# Fields of a definition a write replaces; stamps and group are the service's.
DEFINITION_FIELDS = (
    "usage_mode",
    "widget",
    "llm_instructions_md",
    "llm_instructions",
    "status",
    "rendering_contexts",
    "can_be_generated_by_llm",
    "can_be_generated_by_tool",
    "description",
    "dont_cache_this",
)

_KEEP: Any = object()


def _values(definition: dict[str, Any]) -> dict[str, Any]:
    values = {name: definition.get(name) for name in DEFINITION_FIELDS}
    values["dont_cache_this"] = bool(values["dont_cache_this"])
    return values


def _upsert(*, definition: dict[str, Any], user_id: str, group_id: Any, now: Any) -> TagDefinition:
    scope, tag = definition["scope"], definition["tag"]
    values = _values(definition)
    if group_id is not _KEEP:
        values["group_id"] = group_id
    existing = TagDefinition.objects.select_for_update().filter(scope=scope, tag=tag).first()
    if existing is None:
        try:
            # A savepoint: when another admin creates the same (scope, tag) first, the unique
            # constraint fires and this becomes an update of their row.
            with transaction.atomic():
                created = TagDefinition.objects.create(
                    scope=scope, tag=tag, created_by=user_id, last_updated_by=user_id, create_date=now, last_update=now, **values
                )
                audit.record(actor=user_id, instance=created, before=None, after=audit.snapshot(created))
                return created
        except IntegrityError:
            existing = TagDefinition.objects.select_for_update().get(scope=scope, tag=tag)
    before = audit.snapshot(existing)
    for name, value in values.items():
        setattr(existing, name, value)
    existing.last_updated_by = user_id
    existing.last_update = now
    existing.save()
    audit.record(actor=user_id, instance=existing, before=before, after=audit.snapshot(existing))
    return existing


def _delete(definitions: Iterable[TagDefinition], *, user_id: str) -> int:
    """Delete the (locked) definitions, each with its audit entry."""
    pks = []
    for definition in definitions:
        audit.record(actor=user_id, instance=definition, before=audit.snapshot(definition), after=None)
        pks.append(definition.pk)
    TagDefinition.objects.filter(pk__in=pks).delete()
    return len(pks)


def tag_upsert(*, definition: dict[str, Any], user_id: str) -> TagDefinition:
    """Create or replace the definition (scope, tag) (`POST /api/chat-admin/tagdef`).

    `createDate`/`createdBy` are set on creation and kept; `lastUpdate`/`lastUpdatedBy` refreshed
    on every write. An IaC `groupId` stays: the group's next batch still owns the definition.
    """
    with transaction.atomic():
        saved = _upsert(definition=definition, user_id=user_id, group_id=_KEEP, now=timezone.now())
        cache.invalidate()
    return saved


def tag_delete(*, scope: str, tag: str, user_id: str) -> None:
    """Delete for good (permanent; the model stops using the tag at once)."""
    with transaction.atomic():
        deleted = _delete(TagDefinition.objects.select_for_update().filter(scope=scope, tag=tag), user_id=user_id)
        if not deleted:
            raise NotFound(f"tag definition not found: scope {scope!r}, tag {tag!r}")
        cache.invalidate()


def tags_delete(*, ids: Iterable[int], user_id: str) -> int:
    """Delete several definitions by primary key (the Django admin's bulk delete)."""
    with transaction.atomic():
        deleted = _delete(TagDefinition.objects.select_for_update().filter(pk__in=list(ids)), user_id=user_id)
        cache.invalidate()
    return deleted


def tags_set_status(*, ids: Iterable[int], status: TagStatus | str, user_id: str) -> int:
    """Move definitions to `status` (docs/api.md, "Tag definitions"; every move is allowed,
    including out of `retired`: an operator un-retires on purpose)."""
    with transaction.atomic():
        now, changed = timezone.now(), 0
        for definition in TagDefinition.objects.select_for_update().filter(pk__in=list(ids)):
            before = audit.snapshot(definition)
            definition.status, definition.last_updated_by, definition.last_update = status, user_id, now
            definition.save(update_fields=["status", "last_updated_by", "last_update"])
            audit.record(actor=user_id, instance=definition, before=before, after=audit.snapshot(definition))
            changed += 1
        cache.invalidate()
    return changed


def tag_cache_clear() -> None:
    """`POST /api/chat-admin/tagdef/clear-cache`: every cached tag entry becomes stale."""
    cache.invalidate()


@dataclass(frozen=True, slots=True)
class DeployResult:
    applied: int
    deleted: int


def tags_deploy(
    *, definitions: list[dict[str, Any]], group_id: str, user_id: str, timestamp: str | None = None, dry_run: bool = False
) -> DeployResult:
    """Apply an IaC batch (docs/api.md, "Infrastructure-as-code batches"): every member is upserted with `group_id`; members of that
    group missing from the batch are deleted; all of it in one transaction. A definition of the
    same (scope, tag) outside the group joins the group: the batch now owns it."""
    keys = {(item["scope"], item["tag"]) for item in definitions}
    with transaction.atomic():
        stale = [row.pk for row in TagDefinition.objects.select_for_update().filter(group_id=group_id) if (row.scope, row.tag) not in keys]
        if dry_run:
            return DeployResult(applied=len(definitions), deleted=len(stale))
        now = timezone.now()
        for item in definitions:
            _upsert(definition=item, user_id=user_id, group_id=group_id, now=now)
        if stale:
            _delete(TagDefinition.objects.select_for_update().filter(pk__in=stale), user_id=user_id)
        cache.invalidate()
    logger.info("tag batch group=%s timestamp=%s by %s: %d applied, %d deleted", group_id, timestamp, user_id, len(definitions), len(stale))
    return DeployResult(applied=len(definitions), deleted=len(stale))
