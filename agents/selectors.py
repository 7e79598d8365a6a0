"""Reads on agents."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from agents.models import AgentDefinition, AgentVersion
from chatplatform.api.errors import Code, NotFound


def agent_get(*, agent_id: str) -> AgentDefinition:
    """The agent, or 404 INVALID_AGENT_ID."""
    agent = AgentDefinition.objects.filter(agent_id=agent_id).first()
    if agent is None:
        raise NotFound(f"agent {agent_id} not found", code=Code.INVALID_AGENT_ID)
    return agent


def agents_search(*, agent_ids: Iterable[str] | None) -> QuerySet[AgentDefinition]:
    """The agents with these ids (unknown ids are skipped), or every agent; by agentId (primary key)."""
    agents = AgentDefinition.objects.order_by("agent_id")
    if agent_ids is not None:
        agents = agents.filter(agent_id__in=list(agent_ids))
    return agents


def agent_versions(*, agent_id: str) -> QuerySet[AgentVersion]:
    """The agent's version history, newest first (index: agentversion_unique_version); 404 when absent."""
    agent = agent_get(agent_id=agent_id)
    return AgentVersion.objects.filter(agent=agent).order_by("-version")


def agent_version(*, agent_id: str, version: int) -> AgentVersion:
    """One stored version of the agent; 404 (INVALID_AGENT_ID, or NOT_FOUND for the version) otherwise."""
    row = agent_versions(agent_id=agent_id).filter(version=version).first()
    if row is None:
        raise NotFound(f"agent {agent_id} has no version {version}")
    return row
