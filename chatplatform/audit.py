"""The audit log of admin writes: one call, `record`, from each write service (agents, tools, tags,
directives, knowledge bases and documents, chat apps), which the Admin API and the Django admin
both call, so neither can write without an entry. `record_event` for what is not a write of a
record (a sign-in lockout, chatplatform.signin). Explicit calls, not signals: bulk writes
(`update`, `bulk_create`) send no signals, and the actor is only known to the service.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from chatplatform.models import AuditAction, AuditEntry

REDACTED = "[redacted]"
# Keys whose values the API never returns, wherever they sit in a stored value (tool auth, ...).
_SECRET_KEYS = {"clientsecret", "client_secret", "secret", "password", "apikey", "api_key", "accesstoken", "access_token", "token"}
# Written on every save; in a diff they only hide what really changed.
_BOOKKEEPING = {"updated_at", "last_update", "last_modified_by", "last_updated_by", "version", "index_version"}
# Stored document bytes and the like: too large for a log, and not what an operator reads.
_OMITTED = {"content", "password"}


def snapshot(instance: models.Model) -> dict[str, Any]:
    """The instance's stored fields as JSON values (dates as ISO text), for `record`."""
    values = {}
    for field in instance._meta.concrete_fields:
        if field.name in _OMITTED:
            continue
        values[field.name] = field.value_from_object(instance)
    return json.loads(json.dumps(values, cls=DjangoJSONEncoder))


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: REDACTED if key.lower() in _SECRET_KEYS and item else _redact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact(item) for item in value]
    return value


def _changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    names = [*(before or {}), *(name for name in (after or {}) if name not in (before or {}))]
    changes = {}
    for name in names:
        old, new = (before or {}).get(name), (after or {}).get(name)
        if old == new or (before is not None and after is not None and name in _BOOKKEEPING):
            continue
        entry = {"before": _redact({name: old})[name], "after": _redact({name: new})[name]}
        if before is not None and after is not None and entry["before"] == entry["after"]:
            entry["after"] = f"{REDACTED} (changed)"  # only a secret changed: say so, never what to
        changes[name] = entry
    return changes


def changed(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    """Whether a write from snapshot `before` to `after` changed more than bookkeeping: what `record` records."""
    return before is None or after is None or bool(_changes(before, after))


def record(*, actor: str, instance: models.Model, before: dict[str, Any] | None, after: dict[str, Any] | None) -> AuditEntry | None:
    """Record one write of `instance`: `before` None is a create, `after` None a delete (snapshots
    from `snapshot`). An update that changed nothing but bookkeeping is not recorded."""
    action = AuditAction.CREATE if before is None else AuditAction.DELETE if after is None else AuditAction.UPDATE
    changes = _changes(before, after)
    if action == AuditAction.UPDATE and not changes:
        return None
    return AuditEntry.objects.create(
        actor=str(actor or "")[:255],
        action=action,
        object_type=str(instance._meta.verbose_name),
        object_id=str(instance.pk)[:255],
        object_repr=str(instance)[:300],
        changes=changes,
    )


def record_event(*, actor: str, action: str, object_type: str, object_id: str, changes: dict[str, Any]) -> AuditEntry:
    """Record something that is not a model's write (a sign-in lockout): the same entry, named by hand."""
    return AuditEntry.objects.create(
        actor=str(actor or "")[:255],
        action=action,
        object_type=object_type[:64],
        object_id=object_id[:255],
        object_repr=f"{object_type} {object_id}"[:300],
        changes=_redact(changes),
    )
