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


def collaborator_graph() -> dict[str, list[str]]:
    """Each agent that lists collaborators → their agentIds, in order (one query; agents are few)."""
    rows = AgentDefinition.objects.filter(collaborators__isnull=False).values_list("agent_id", "collaborators")
    return {agent_id: [c["agentId"] for c in collaborators if isinstance(c, dict)] for agent_id, collaborators in rows if collaborators}


def agents_listing_collaborator(agent_id: str) -> list[str]:
    """The agents that list `agent_id` among their collaborators."""
    return sorted(owner for owner, collaborators in collaborator_graph().items() if agent_id in collaborators)


def agents_listing_knowledge_base(knowledge_base_id: str) -> list[str]:
    """The agents whose `knowledgeBases` name this knowledge base (the knowledge app asks before a delete)."""
    rows = AgentDefinition.objects.filter(knowledge_bases__isnull=False).values_list("agent_id", "knowledge_bases")
    return sorted(
        agent_id for agent_id, bases in rows if any(isinstance(base, dict) and base.get("id") == knowledge_base_id for base in bases or [])
    )


def collaborator_chain_problem(agent_id: str, collaborators: list[str], *, max_depth: int) -> str | None:
    """Why giving `agent_id` these collaborators breaks the rules of docs/api.md "Collaborating agents", naming the chain, or None:
    a chain that loops back (A → B → A), or one deeper than `max_depth` collaborators counted
    through this agent from the top of its longest chain of supervisors."""
    graph = collaborator_graph()
    graph[agent_id] = collaborators

    def loop(path: list[str]) -> list[str] | None:
        for following in graph.get(path[-1], []):
            if following == agent_id:
                return [*path, following]
            if following not in path:
                found = loop([*path, following])
                if found:
                    return found
        return None

    cycle = loop([agent_id])
    if cycle:
        return f"the chain {' → '.join(cycle)} loops back to {agent_id}"

    supervisors: dict[str, list[str]] = {}
    for owner, listed in graph.items():
        for collaborator in listed:
            supervisors.setdefault(collaborator, []).append(owner)

    def longest(start: str, edges: dict[str, list[str]]) -> list[str]:
        best = [start]
        for following in edges.get(start, []):
            candidate = [start, *longest(following, edges)]
            if len(candidate) > len(best):
                best = candidate
        return best

    chain = [*reversed(longest(agent_id, supervisors)[1:]), *longest(agent_id, graph)]
    if len(chain) - 1 > max_depth:
        return f"the chain {' → '.join(chain)} is {len(chain) - 1} deep; at most {max_depth} levels of collaborators are allowed"
    return None
