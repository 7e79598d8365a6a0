"""Writes on tool definitions. The Admin API and the Django admin both go through these."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction

from chatplatform import audit
from chatplatform.api.errors import ApiError
from tools.models import ExecutionType, ToolDefinition
from tools.schema import VARIANT_FIELDS
from tools.serializers import model_values, stored_definition
from tools.validation import REDACTED, Issue, ToolInvalid, clean_tool

# An upsert validates outside the transaction (an AWS Lambda lookup must not hold the database's
# write lock) and writes only if the row is still what it merged onto; else it merges again.
_UPSERT_ATTEMPTS = 3


def _merged(existing: ToolDefinition | None, changes: Mapping[str, Any]) -> dict[str, Any]:
    """The whole definition an upsert asks for: `changes` over the stored definition (docs/api.md, "Tools":
    an update holds toolId and only the changed fields; `null` clears an optional field)."""
    if existing is None:
        return dict(changes)
    base = stored_definition(existing)
    new_type = changes.get("executionType", existing.execution_type)
    if new_type != existing.execution_type:
        # Switching executionType drops the old variant's stored fields instead of refusing them.
        for field in VARIANT_FIELDS.get(existing.execution_type, ()):
            base.pop(field, None)
    merged = {**base, **changes}
    auth = changes.get("auth")
    stored_secret = (existing.auth or {}).get("clientSecret") if new_type == existing.execution_type else None
    if isinstance(auth, Mapping) and stored_secret and auth.get("clientSecret") in (None, REDACTED):
        # The redacted placeholder (or no secret at all) keeps the stored secret.
        merged["auth"] = {**auth, "clientSecret": stored_secret}
    return merged


def _prepare(existing: ToolDefinition | None, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Model values for the upsert, validated; ToolInvalid otherwise."""
    clean = clean_tool(
        _merged(existing, changes),
        previous_status=existing.lifecycle_status if existing else None,
        verified_function_arn=existing.function_arn if existing and existing.execution_type == ExecutionType.FUNCTION else None,
    )
    values = model_values(clean)
    old_auth, new_auth = (existing.auth if existing else None) or {}, values["auth"]
    if (
        new_auth
        and old_auth.get("token")
        and all(old_auth.get(key) == new_auth.get(key) for key in ("clientId", "clientSecret", "tokenUrl"))
    ):
        # The cached access token stays valid while the credentials it was issued for are unchanged.
        new_auth["token"] = old_auth["token"]
    return values


def _tool_id_of(tool: Any) -> str:
    if not isinstance(tool, Mapping):
        raise ToolInvalid([Issue("", "must be an object")])
    tool_id = tool.get("toolId")
    if not isinstance(tool_id, str) or not tool_id.strip():
        raise ToolInvalid([Issue("toolId", "is required")])
    return tool_id


def tool_check(*, tool: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a create or update payload against the stored definition without writing; the
    model values an upsert would store. The Django admin form's clean() calls this."""
    tool_id = _tool_id_of(tool)
    return _prepare(ToolDefinition.objects.filter(tool_id=tool_id).first(), tool)


def tool_upsert(*, tool: Mapping[str, Any], user_id: str) -> ToolDefinition:
    """Create the tool when its toolId is new, else merge the given fields onto the stored one.

    createdBy is set once; lastModifiedBy and updatedAt on every write (docs/api.md, "Who may read what": from the
    request's userId). Raises ToolInvalid (400) naming every broken rule; nothing is written then.
    """
    tool_id = _tool_id_of(tool)
    for _ in range(_UPSERT_ATTEMPTS):
        existing = ToolDefinition.objects.filter(tool_id=tool_id).first()
        values = _prepare(existing, tool)
        try:
            with transaction.atomic():
                current = ToolDefinition.objects.select_for_update().filter(tool_id=tool_id).first()
                if (current and current.updated_at) != (existing and existing.updated_at):
                    continue  # written by someone else meanwhile: merge onto their version
                if current is None:
                    created = ToolDefinition.objects.create(**values, created_by=user_id, last_modified_by=user_id)
                    audit.record(actor=user_id, instance=created, before=None, after=audit.snapshot(created))
                    return created
                before = audit.snapshot(current)
                for field, value in values.items():
                    setattr(current, field, value)
                current.last_modified_by = user_id
                current.save()
                audit.record(actor=user_id, instance=current, before=before, after=audit.snapshot(current))
                return current
        except IntegrityError:
            continue  # a concurrent create of the same toolId won: update it instead
    raise ApiError(f"tool.toolId: {tool_id} is being changed by other requests; retry", status_code=409)


def tool_delete(*, tool_id: str, user_id: str) -> bool:
    """Delete the tool; False when there was none."""
    with transaction.atomic():
        tool = ToolDefinition.objects.select_for_update().filter(tool_id=tool_id).first()
        if tool is None:
            return False
        audit.record(actor=user_id, instance=tool, before=audit.snapshot(tool), after=None)
        tool.delete()
    return True
