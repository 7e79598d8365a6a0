"""Writes on semantic directives: create or update by (scope, id), delete, and the IaC batch.

Every write validates with `directives.serializers` before it touches the database, and runs in
one transaction, so a 400 leaves nothing half-written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone
from rest_framework import serializers

from chatplatform import audit
from chatplatform.api.errors import NotFound
from directives.models import DirectiveDeployment, SemanticDirective
from directives.serializers import validate_directive, validate_directive_key, validate_group_id

T = TypeVar("T")
Key = tuple[str, str]  # (scope, directive id)
# A batch with many bad members would make an unreadable message; the first ones say enough.
MAX_REPORTED_MEMBER_ERRORS = 10


def _prefixed(name: str, exc: serializers.ValidationError) -> serializers.ValidationError:
    return serializers.ValidationError({name: exc.detail})


def _retrying_once(write: Callable[[], T]) -> T:
    """Run `write` in a transaction; retry once when a concurrent insert of the same key won.

    The retry finds the row the other request inserted and applies this one as an update of it.
    """
    try:
        with transaction.atomic():
            return write()
    except IntegrityError:
        pass
    with transaction.atomic():
        return write()


def _take_sqlite_write_lock(scope: str, directive_id: str) -> None:
    # SQLite has no row locks, and a transaction that reads before it writes fails with "database
    # is locked" when another writer commits in between (SQLITE_BUSY_SNAPSHOT, which the busy
    # timeout does not wait out). A write statement first takes the database's write lock up
    # front, so concurrent writers queue behind the timeout instead.
    if connection.vendor == "sqlite":
        SemanticDirective.objects.filter(scope=scope, directive_id=directive_id).update(last_update=F("last_update"))


def directive_upsert(*, data: Any, user_id: str) -> SemanticDirective:
    """Create the directive when (scope, id) is new, else update its description and instructions.

    `createDate` and `createdBy` are set once; `lastUpdate` and `lastUpdatedBy` on every write.
    Client stamps and `groupId` are ignored (an existing groupId is kept: only a batch sets it).
    Raises ValidationError naming `semanticDirective.<field>` (400), and writes nothing then.
    """
    try:
        fields = validate_directive(data)
    except serializers.ValidationError as exc:
        raise _prefixed("semanticDirective", exc)

    def write() -> SemanticDirective:
        _take_sqlite_write_lock(fields["scope"], fields["directive_id"])
        now = timezone.now()
        existing = SemanticDirective.objects.select_for_update().filter(scope=fields["scope"], directive_id=fields["directive_id"]).first()
        if existing is None:
            directive = SemanticDirective(**fields, create_date=now, last_update=now, created_by=user_id, last_updated_by=user_id)
            directive.save(force_insert=True)
            audit.record(actor=user_id, instance=directive, before=None, after=audit.snapshot(directive))
            return directive
        before = audit.snapshot(existing)
        existing.description = fields["description"]
        existing.instructions = fields["instructions"]
        existing.last_update = now
        existing.last_updated_by = user_id
        existing.save(update_fields=["description", "instructions", "last_update", "last_updated_by"])
        audit.record(actor=user_id, instance=existing, before=before, after=audit.snapshot(existing))
        return existing

    return _retrying_once(write)


def directive_delete(*, data: Any, user_id: str) -> None:
    """Delete the directive `data` names (`{scope, id}` or `{scopeType, scopeValue, id}`); 404 when absent."""
    try:
        key = validate_directive_key(data)
    except serializers.ValidationError as exc:
        raise _prefixed("semanticDirective", exc)
    with transaction.atomic():
        directive = SemanticDirective.objects.select_for_update().filter(scope=key["scope"], directive_id=key["directive_id"]).first()
        if directive is not None:
            audit.record(actor=user_id, instance=directive, before=audit.snapshot(directive), after=None)
            directive.delete()
    if directive is None:
        raise NotFound(f"semantic directive {key['directive_id']} not found in scope {key['scope']}")


# --- infrastructure-as-code batches ------------------------------------------------------------


@dataclass
class DeployResult:
    """What a batch changed (or, in a dry run, would change), as sorted (scope, id) keys."""

    group_id: str
    dry_run: bool
    created: list[Key] = field(default_factory=list)
    updated: list[Key] = field(default_factory=list)
    unchanged: list[Key] = field(default_factory=list)
    deleted: list[Key] = field(default_factory=list)

    @property
    def applied(self) -> int:
        """Members of the batch now stored as the batch says: created, updated or already equal."""
        return len(self.created) + len(self.updated) + len(self.unchanged)


def _validated_members(directives: Any) -> list[dict[str, Any]]:
    """Every member validated with the single-directive rules, before anything is written.

    Raises ValidationError naming `semanticDirectives[i].<field>`.
    """
    if not isinstance(directives, list):
        raise serializers.ValidationError({"semanticDirectives": ["is required: a list of directives"]})
    members: list[dict[str, Any]] = []
    errors: list[Any] = []
    first_index: dict[Key, int] = {}
    for index, item in enumerate(directives):
        try:
            fields = validate_directive(item)
        except serializers.ValidationError as exc:
            errors.append(exc.detail)
        else:
            key = (fields["scope"], fields["directive_id"])
            if key in first_index:
                errors.append({"id": [f"repeats semanticDirectives[{first_index[key]}]: (scope, id) must be unique in a batch"]})
            else:
                first_index[key] = index
                members.append(fields)
                errors.append({})
        if sum(1 for error in errors if error) >= MAX_REPORTED_MEMBER_ERRORS:
            break
    if any(errors):
        raise serializers.ValidationError({"semanticDirectives": errors})
    return members


def directives_deploy(
    *,
    group_id: Any,
    directives: Any,
    user_id: str,
    dry_run: bool = False,
    stage: str = "",
    timestamp: str = "",
) -> DeployResult:
    """Make the directives of `group_id` exactly `directives`: create or update every member (each
    gets the groupId, taking over a directive of the same (scope, id) from elsewhere), and delete
    the group's directives missing from the batch. Other groups' and API-made directives stay.

    All or nothing: one invalid member is a ValidationError (400) and nothing changes. A member
    equal to what is stored keeps its lastUpdate. `dry_run` computes the same result, writes nothing.
    """
    group_id = validate_group_id(group_id)
    members = _validated_members(directives)

    def apply() -> DeployResult:
        now = timezone.now()
        record = None
        if not dry_run:
            # Written first: on SQLite this takes the write lock before the reads below.
            record = DirectiveDeployment.objects.create(
                group_id=group_id, stage=stage, timestamp=timestamp, user_id=user_id, deployed_at=now
            )
        keys = {(m["scope"], m["directive_id"]): m for m in members}
        in_batch = Q(scope__in={scope for scope, _ in keys}, directive_id__in={i for _, i in keys}) if keys else Q(pk__in=[])
        stored = {
            (d.scope, d.directive_id): d
            for d in SemanticDirective.objects.select_for_update().filter(Q(group_id=group_id) | in_batch).order_by("pk")
        }
        result = DeployResult(group_id=group_id, dry_run=dry_run)
        to_create: list[SemanticDirective] = []
        to_update: list[SemanticDirective] = []
        befores: dict[int, dict[str, Any]] = {}
        for key, fields in keys.items():
            directive = stored.get(key)
            if directive is None:
                result.created.append(key)
                to_create.append(
                    SemanticDirective(
                        **fields,
                        group_id=group_id,
                        create_date=now,
                        last_update=now,
                        created_by=user_id,
                        last_updated_by=user_id,
                    )
                )
            elif (directive.description, directive.instructions, directive.group_id) == (
                fields["description"],
                fields["instructions"],
                group_id,
            ):
                result.unchanged.append(key)
            else:
                result.updated.append(key)
                befores[directive.pk] = audit.snapshot(directive)
                directive.description = fields["description"]
                directive.instructions = fields["instructions"]
                directive.group_id = group_id
                directive.last_update = now
                directive.last_updated_by = user_id
                to_update.append(directive)
        missing = [d for key, d in stored.items() if d.group_id == group_id and key not in keys]
        result.deleted = [(d.scope, d.directive_id) for d in missing]
        for keys_list in (result.created, result.updated, result.unchanged, result.deleted):
            keys_list.sort()
        if record is not None:
            SemanticDirective.objects.bulk_create(to_create)
            SemanticDirective.objects.bulk_update(
                to_update, ["description", "instructions", "group_id", "last_update", "last_updated_by"], batch_size=500
            )
            for directive in to_create:
                audit.record(actor=user_id, instance=directive, before=None, after=audit.snapshot(directive))
            for directive in to_update:
                audit.record(actor=user_id, instance=directive, before=befores[directive.pk], after=audit.snapshot(directive))
            for directive in missing:
                audit.record(actor=user_id, instance=directive, before=audit.snapshot(directive), after=None)
            SemanticDirective.objects.filter(pk__in=[d.pk for d in missing]).delete()
            record.applied, record.deleted = result.applied, len(result.deleted)
            record.save(update_fields=["applied", "deleted"])
        return result

    return _retrying_once(apply)
