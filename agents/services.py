"""Writes on agents: create or update (one version per change), rollback, delete.

Every write validates with `agents.serializers.validate_agent` while it holds the agent's row, so
two admins saving at once get consecutive versions and each result is checked as a whole.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from rest_framework import serializers

from agents.models import AgentDefinition, AgentVersion
from agents.selectors import agents_listing_collaborator
from agents.serializers import AgentSerializer, AgentWriteSerializer, validate_agent
from chatplatform import audit
from chatplatform.api.errors import Code, InvalidRequest, NotFound


def _not_found(agent_id: str) -> NotFound:
    return NotFound(f"agent {agent_id} not found", code=Code.INVALID_AGENT_ID)


def _lock(agent_id: str) -> AgentDefinition | None:
    """The stored agent, locked until the transaction ends; None when it does not exist yet."""
    return AgentDefinition.objects.select_for_update().filter(agent_id=agent_id).first()


def _record_version(agent: AgentDefinition, *, user_id: str) -> None:
    AgentVersion.objects.create(
        agent=agent,
        version=agent.version,
        definition=dict(AgentSerializer(agent).data),
        modified_by=user_id,
        modified_at=agent.updated_at,
    )


def _write(existing: AgentDefinition | None, data: dict[str, Any], *, user_id: str) -> AgentDefinition:
    """Validate `data` against the locked `existing` agent and store it as the next version."""
    try:
        fields = validate_agent(data, existing=existing)
    except serializers.ValidationError as exc:
        raise serializers.ValidationError({"agent": exc.detail})
    before = None if existing is None else audit.snapshot(existing)
    if existing is None:
        agent = AgentDefinition(**fields, version=1, created_by=user_id, last_modified_by=user_id)
        agent.save(force_insert=True)
    else:
        changed = {name: value for name, value in fields.items() if getattr(existing, name) != value}
        if not changed:
            return existing  # nothing to record: the version only counts real changes
        agent = existing
        for name, value in changed.items():
            setattr(agent, name, value)
        agent.version += 1  # safe: the row is locked until commit
        agent.last_modified_by = user_id
        agent.save()
    _record_version(agent, user_id=user_id)
    audit.record(actor=user_id, instance=agent, before=before, after=audit.snapshot(agent))
    return agent


def agent_upsert(*, data: dict[str, Any], user_id: str) -> AgentDefinition:
    """Create the agent (version 1) when `agentId` is new; otherwise change only the given fields.

    Raises ValidationError naming `agent.<field>` (400), and writes nothing then.
    """
    agent_id = data.get("agentId")
    if agent_id is None or not isinstance(agent_id, str):
        # The row lock needs the id before the serializer runs, so this one rule is checked here.
        rule = "is required" if agent_id is None else "must be a string"
        raise serializers.ValidationError({"agent": {"agentId": [rule]}})
    try:
        with transaction.atomic():
            return _write(_lock(agent_id), data, user_id=user_id)
    except IntegrityError:
        # Two creates of one new agentId raced and the other insert won: the retry finds the row
        # and applies this request as an update of it.
        pass
    with transaction.atomic():
        return _write(_lock(agent_id), data, user_id=user_id)


def agent_rollback(*, agent_id: str, version: int, user_id: str) -> AgentDefinition:
    """Write the stored definition of `version` as a new version (current + 1).

    The old definition is validated like any write: a tool deleted since, or one deprecated since
    and no longer on the agent, refuses the rollback (400). Rolling back to a definition equal to
    the current one changes nothing and records no version.
    """
    with transaction.atomic():
        existing = _lock(agent_id)
        if existing is None:
            raise _not_found(agent_id)
        row = AgentVersion.objects.filter(agent=existing, version=version).first()
        if row is None:
            raise NotFound(f"agent {agent_id} has no version {version}")  # as GET .../versions/{version}
        writable = set(AgentWriteSerializer().fields)
        data = {name: value for name, value in row.definition.items() if name in writable}
        data["agentId"] = agent_id
        return _write(existing, data, user_id=user_id)


def agent_delete(*, agent_id: str, user_id: str) -> None:
    """Delete the agent and its history; refused (400) while a chat app uses it or another agent
    lists it as a collaborator (docs/api.md, "Collaborating agents")."""
    with transaction.atomic():
        agent = _lock(agent_id)
        if agent is None:
            raise _not_found(agent_id)
        supervisors = agents_listing_collaborator(agent_id)
        if supervisors:
            raise InvalidRequest(
                f"agent {agent_id} is a collaborator of agents {', '.join(supervisors)}: remove it from their collaborators first",
                field="agentId",
            )
        audit.record(actor=user_id, instance=agent, before=audit.snapshot(agent), after=None)
        try:
            agent.delete()
        except ProtectedError as exc:
            users = ", ".join(sorted(str(obj) for obj in exc.protected_objects))
            raise InvalidRequest(
                f"agent {agent_id} is used by chat apps {users}: delete them or point them to another agent first",
                field="agentId",
            )
