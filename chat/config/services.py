"""Apply a configuration (docs/api.md, "Configuration as code"): make the stored definitions what a
document exported by `chat.config.selectors.config_export` (and edited, reviewed) says.

Every write goes through the kind's own service, as its Admin API endpoint does, so versions, the
audit log and cache invalidation behave alike. Everything happens in one transaction: a definition
that breaks a rule rolls back all the others, and a dry run rolls back at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from rest_framework import serializers

from chat.config.kinds import AGENTS, KINDS, KINDS_BY_NAME, Kind
from chatplatform import audit
from chatplatform.api.errors import ApiError, InvalidRequest
from chatplatform.api.exceptions import flatten_errors
from tools.validation import ToolInvalid

# The wrapper each service puts around its field names ("agent.toolIds: ..."), replaced by the kind and id.
_WRAPPERS = ("agent", "tool", "chatApp", "knowledgeBase", "semanticDirective", "tagDefinition")


class Action:
    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Change:
    kind: str
    id: str
    action: str


def _field_line(line: str) -> str:
    """A service's `wrapper.field: rule` line as `field: rule`."""
    wrapper, dot, rest = line.partition(".")
    return rest if dot and wrapper in _WRAPPERS else line


def _invalid(where: str, exc: Exception) -> InvalidRequest:
    """A 400 naming the definition (`config.<kind>[<id>]`), the field and the rule."""
    if isinstance(exc, ToolInvalid):
        lines = [f"{issue.field}: {issue.message}" if issue.field else issue.message for issue in exc.issues]
    elif isinstance(exc, serializers.ValidationError):
        lines = [_field_line(line) for line in flatten_errors(exc.detail)]
    else:  # an ApiError: a chat app's unknown agent (404 through its own endpoint), a delete refused
        lines = [_field_line(exc.message if isinstance(exc, ApiError) else str(exc))]
    return InvalidRequest("; ".join(f"{where}.{line}" if _names_field(line) else f"{where}: {line}" for line in lines))


def _names_field(line: str) -> bool:
    head, separator, _ = line.partition(": ")
    return bool(separator) and " " not in head


def _definitions(config: Any) -> list[tuple[Kind, list[tuple[str, dict[str, Any]]]]]:
    """The kinds `config` holds, in dependency order, each with its definitions by id; 400 naming
    the first definition that cannot be named or is listed twice."""
    if not isinstance(config, Mapping):
        raise InvalidRequest("must be an object of definition lists", field="config")
    unknown = sorted(set(config) - set(KINDS_BY_NAME))
    if unknown:
        raise InvalidRequest(f"is not a kind of definition (allowed: {', '.join(KINDS_BY_NAME)})", field=f"config.{unknown[0]}")
    found = []
    for kind in KINDS:
        if kind.name not in config:
            continue
        items = config[kind.name]
        if not isinstance(items, list):
            raise InvalidRequest("must be a list of definitions", field=f"config.{kind.name}")
        named: dict[str, tuple[int, dict[str, Any]]] = {}
        for index, item in enumerate(items):
            where = f"config.{kind.name}[{index}]"
            if not isinstance(item, dict):
                raise InvalidRequest("must be an object", field=where)
            try:
                definition_id = kind.id_of(item)
            except (serializers.ValidationError, ApiError) as exc:
                raise _invalid(where, exc) from None
            if definition_id in named:
                raise InvalidRequest(f"{definition_id} is listed twice (also at index {named[definition_id][0]})", field=where)
            named[definition_id] = (index, item)
        found.append((kind, [(definition_id, item) for definition_id, (_, item) in named.items()]))
    return found


def _collaborators_first(agents: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Agent ids ordered so that an agent comes after the collaborators it lists among `agents`
    (a loop is left to the agent rules, which refuse it)."""
    ordered: list[str] = []
    done: set[str] = set()

    def visit(agent_id: str, path: tuple[str, ...]) -> None:
        if agent_id in done or agent_id in path or agent_id not in agents:
            return
        collaborators = agents[agent_id].get("collaborators")
        for collaborator in collaborators if isinstance(collaborators, list) else []:
            if isinstance(collaborator, Mapping) and isinstance(collaborator.get("agentId"), str):
                visit(collaborator["agentId"], (*path, agent_id))
        done.add(agent_id)
        ordered.append(agent_id)

    for agent_id in agents:
        visit(agent_id, ())
    return ordered


def _write(kind: Kind, definition_id: str, definition: dict[str, Any], *, user_id: str) -> str:
    """Write one definition through its service; roll it back when it changed nothing but the
    stamps some services refresh on every write, so a re-apply leaves the record as it was."""
    existing = kind.get(definition_id)
    if existing is not None and kind.render(existing) == definition:
        return Action.UNCHANGED  # as exported: nothing to validate again or write (a re-applied release)
    before = audit.snapshot(existing) if existing is not None else None
    savepoint = transaction.savepoint()
    try:
        kind.upsert(definition, user_id)
    except (serializers.ValidationError, ApiError) as exc:
        raise _invalid(f"config.{kind.name}[{definition_id}]", exc) from None
    stored = kind.get(definition_id)
    if before is not None and stored is not None and not audit.changed(before, audit.snapshot(stored)):
        transaction.savepoint_rollback(savepoint)
        return Action.UNCHANGED
    transaction.savepoint_commit(savepoint)
    return Action.CREATE if before is None else Action.UPDATE


def _delete(kind: Kind, definition_id: str, *, user_id: str) -> None:
    try:
        kind.delete(definition_id, user_id)
    except (serializers.ValidationError, ApiError) as exc:
        raise _invalid(f"config.{kind.name}[{definition_id}]", exc) from None


def config_apply(*, config: Any, user_id: str, dry_run: bool = False, prune: bool = False) -> list[Change]:
    """Create or update every definition of `config`, in dependency order; with `prune`, delete the
    stored records of the kinds present that it does not list, in the reverse order.

    Definitions whose rules stand alone are checked before the transaction opens; those that name
    other records (an agent's tools, a chat app's agent) as they are written, against the
    configuration written so far. Either way a failure is a 400 naming the kind, the id and the
    field, and nothing is written. A dry run reports the same changes and writes nothing.
    """
    kinds = _definitions(config)
    for kind, definitions in kinds:
        if kind.check is None:
            continue
        for definition_id, definition in definitions:
            try:
                kind.check(definition)
            except (serializers.ValidationError, ApiError) as exc:
                raise _invalid(f"config.{kind.name}[{definition_id}]", exc) from None

    changes: list[Change] = []
    with transaction.atomic():
        for kind, definitions in kinds:
            if kind is AGENTS:
                by_id = dict(definitions)
                definitions = [(agent_id, by_id[agent_id]) for agent_id in _collaborators_first(by_id)]
            for definition_id, definition in definitions:
                changes.append(Change(kind.name, definition_id, _write(kind, definition_id, definition, user_id=user_id)))
        if prune:
            for kind, definitions in reversed(kinds):
                listed = {definition_id for definition_id, _ in definitions}
                stale = {kind.record_id(record): record for record in kind.records() if kind.record_id(record) not in listed}
                order = list(stale)
                if kind is AGENTS:  # a supervisor goes before the collaborators it lists
                    order = _collaborators_first({agent_id: kind.render(agent) for agent_id, agent in stale.items()})[::-1]
                for definition_id in order:
                    _delete(kind, definition_id, user_id=user_id)
                    changes.append(Change(kind.name, definition_id, Action.DELETE))
        if dry_run:
            transaction.set_rollback(True)
    return changes
