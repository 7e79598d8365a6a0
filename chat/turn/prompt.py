"""Prompt assembly: what an admitted turn sends the model, decided before its first event.

The chat app's features as resolved for this request (docs/api.md, "Features"), the system prompt (the
agent's basePrompt rendered for the user, with the instructions of the tags the model may emit,
docs/api.md, "The system prompt"), the directives that are candidates for selection, the message's files, and what
the agent brings: its model, tools, knowledge bases and collaborators (docs/api.md, "Tools in a turn").
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from agents.access import agent_access
from agents.models import AgentDefinition
from agents.prompts import check_template, render_system_prompt
from agents.selectors import agent_get
from chat.chat_apps.features import KNOWN_FEATURES, resolve_features
from chat.chat_apps.models import ChatApp
from chat.files.content import ModelInput
from chat.files.selectors import file_model_input, message_files
from chat.files.serializers import ChatMessageFileSerializer
from chat.users.models import ChatUser
from chatplatform import llm
from chatplatform.api.errors import NotFound
from directives.selectors import directives_candidates
from knowledge.selectors import KnowledgeBaseOffer, knowledge_bases_by_id, usable_knowledge_bases
from tags.selectors import instructions_for, tags_for_tools
from tools.selectors import tools_by_ids
from tools.toolset import resolved_tool_ids

SUPERVISOR, SUPERVISOR_ROUTER, DISABLED = "SUPERVISOR", "SUPERVISOR_ROUTER", "DISABLED"
MAX_COLLABORATION_DEPTH = 3  # agent writes refuse deeper chains (docs/api.md, "Collaborating agents")


@dataclass(frozen=True)
class Collaborator:
    """A collaborator an agent may call: the agent, what it is for, what history it gets, its function's name."""

    agent: AgentDefinition
    instruction: str
    history_relay: str  # TO_COLLABORATOR or TO_AGENT
    tool_name: str


@dataclass
class TurnContext:
    """Everything a turn needs after its admission; read once, before the first event."""

    user: ChatUser
    user_fields: dict[str, Any]  # as access rules and prompts see them
    chat_app_id: str
    agent_id: str
    session_id: uuid.UUID | None
    message: str
    files: list[Any]  # ChatMessageFile of each file the message names (stored with it)
    invocation_mode: str | None
    source: str
    timezone: str | None
    entity_id: str | None
    features: dict[str, Any]
    system_prompt: str
    candidates: list[Any]  # directives the selection model chooses from
    model: str
    verification_model: str
    tool_ids: list[str]  # the agent's, toolOverrides applied
    tools: dict[str, Any]  # their ToolDefinitions
    tool_tags: frozenset[str]  # `scope.tag` a tool may emit in this chat app
    tag_instructions: str = ""  # of the tags the model may emit, for every agent of the turn
    attachments: tuple[llm.Attachment, ...] = ()  # the files of the message, as the model gets them
    knowledge: list[KnowledgeBaseOffer] = field(default_factory=list)  # the agent's, that this user may search
    collaboration: str = "DISABLED"  # SUPERVISOR, SUPERVISOR_ROUTER or DISABLED (docs/api.md, "Collaborating agents")
    collaborators: list[Collaborator] = field(default_factory=list)  # those this user may use
    depth: int = 0  # 0 for the turn's own agent, 1 for a collaborator it calls, ...
    request: dict[str, Any] = field(default_factory=dict)  # the converse body as validated (a paused turn goes on from it)
    tool_events: bool = False  # each tool call and its result as events (the AG-UI door, docs/doors.md)
    client_tools: list[dict[str, Any]] = field(default_factory=list)  # an AG-UI client's tools: {name, description, parameters}

    def on(self, feature: str) -> bool:
        return feature_on(self.features, feature)


def warm() -> None:
    """Load what a process's first turn would otherwise load while someone waits: the prompt
    compiler's grammar and the site's model providers (docs/decisions.md, "Warm start")."""
    check_template("{{firstName}}")
    models = {settings.CHAT_DEFAULT_MODEL, settings.CHAT_VERIFICATION_MODEL, settings.CHAT_SELECTION_MODEL, settings.CHAT_TITLE_MODEL}
    llm.preload(sorted(models))


def feature_on(features: dict[str, Any], name: str) -> bool:
    feature = features.get(name)
    return isinstance(feature, dict) and feature.get("enabled") is True


def narrow_features(resolved: dict[str, Any], requested: dict[str, Any]) -> dict[str, Any]:
    """docs/api.md, "Features": a request can switch a resolved feature off (`enabled: false`), never on;
    its other keys are ignored, so it cannot widen a tag list or lower a reprompt threshold."""
    for name in KNOWN_FEATURES:
        asked = requested.get(name)
        if isinstance(asked, dict) and asked.get("enabled") is False and isinstance(resolved.get(name), dict):
            resolved[name] = {**resolved[name], "enabled": False}
    return resolved


def _entity_value(features: dict[str, Any], custom_data: dict[str, Any]) -> str | None:
    """The user's entity (docs/api.md, "Features"): the custom-data field named by `entity.attributeName`."""
    if not feature_on(features, "entity"):
        return None
    value = custom_data.get(features["entity"].get("attributeName") or "")
    if value is None or isinstance(value, dict | list | bool) or str(value) == "":
        return None
    return str(value)


def build_context(
    *,
    request: dict[str, Any],
    user: ChatUser,
    user_fields: dict[str, Any],
    app: ChatApp,
    agent: AgentDefinition,
    session_id: uuid.UUID | None,
    read: Any,
) -> TurnContext:
    """The turn's context for a request already checked; `read(key, load)` keeps definitions in memory."""
    site, app_features = settings.CHAT_SITE_FEATURES, app.features or {}
    features = narrow_features(resolve_features(site=site, app=app_features), request["features"])
    tag_text, tool_tags = "", frozenset[str]()
    if feature_on(features, "tags"):
        tag_text = instructions_for(site_features=site, app_features=app_features)
        tool_tags = tags_for_tools(site_features=site, app_features=app_features)
    files = message_files(user=user, files=request.get("files") or [], features=features)
    entity = _entity_value(features, user_fields["customData"])
    candidates: list[Any] = []
    if feature_on(features, "instructionAugmentation"):
        candidates = directives_candidates(chat_app_id=app.pk, agent_id=agent.pk, tool_ids=list(agent.tool_ids or []), entity_value=entity)
    shared = TurnContext(
        user=user,
        user_fields=user_fields,
        chat_app_id=app.pk,
        agent_id=agent.pk,
        session_id=session_id,
        message=request["message"],
        files=list(ChatMessageFileSerializer(files, many=True).data),
        invocation_mode=request.get("invocationMode"),
        source=request["source"],
        timezone=request.get("timezone"),
        entity_id=entity,
        features=features,
        system_prompt="",
        candidates=candidates,
        model="",
        verification_model="",
        tool_ids=[],
        tools={},
        tool_tags=tool_tags,
        tag_instructions=tag_text,
        attachments=tuple(_attachment(file_model_input(file)) for file in files),
        request=request,
    )
    return for_agent(shared, agent, read)


def for_agent(context: TurnContext, agent: AgentDefinition, read: Any, *, depth: int = 0) -> TurnContext:
    """`context` as `agent` runs it: its prompt rendered for the user, its model, tools, knowledge
    bases and collaborators. A collaborator's turn is built the same way (docs/api.md, "Collaborating agents"), one level deeper."""
    tool_ids = resolved_tool_ids(agent.tool_ids or [], (agent.rollout_policy or {}).get("toolOverrides"))
    knowledge_ids = [base["id"] for base in agent.knowledge_bases or [] if isinstance(base, dict) and base.get("id")]
    system_prompt = render_system_prompt(
        base_prompt=agent.base_prompt,
        user=context.user_fields,
        company_name=settings.CHAT_COMPANY_NAME,
        tag_instructions=context.tag_instructions,
    )
    return dataclasses.replace(
        context,
        agent_id=agent.pk,
        system_prompt=system_prompt,
        model=agent.foundation_model or settings.CHAT_DEFAULT_MODEL,
        verification_model=agent.verification_foundation_model or settings.CHAT_VERIFICATION_MODEL,
        tool_ids=tool_ids,
        tools=read(("tools", *tool_ids), lambda: tools_by_ids(tool_ids)),
        knowledge=_knowledge(knowledge_ids, context.user_fields, read) if knowledge_ids else [],
        collaboration=collaboration_mode(agent),
        collaborators=_collaborators(agent, context.user_fields, read) if depth < MAX_COLLABORATION_DEPTH else [],
        depth=depth,
    )


def _knowledge(knowledge_base_ids: list[str], user_fields: dict[str, Any], read: Any) -> list[KnowledgeBaseOffer]:
    bases = read(("knowledge", *knowledge_base_ids), lambda: knowledge_bases_by_id(knowledge_base_ids))
    return usable_knowledge_bases(knowledge_base_ids=knowledge_base_ids, user=user_fields, bases=bases)


def collaboration_mode(agent: AgentDefinition) -> str:
    """docs/api.md, "Collaborating agents": SUPERVISOR by default when the agent lists collaborators, DISABLED without."""
    mode = agent.agent_collaboration
    mode = mode.get("type") if isinstance(mode, dict) else mode
    if not agent.collaborators:
        return DISABLED
    return mode if mode in (SUPERVISOR, SUPERVISOR_ROUTER, DISABLED) else SUPERVISOR


def _collaborators(agent: AgentDefinition, user_fields: dict[str, Any], read: Any) -> list[Collaborator]:
    """The agent's collaborators this user may use (their own access rules), in its order."""
    if collaboration_mode(agent) == DISABLED:
        return []
    found = []
    for entry in agent.collaborators or []:
        try:
            other = read(("agent", entry["agentId"]), lambda entry=entry: agent_get(agent_id=entry["agentId"]))
        except NotFound:  # deleted since the agent was written: not offered
            continue
        if agent_access(access_rules=other.access_rules, rollout_policy=other.rollout_policy, user=user_fields).allowed:
            relay = entry.get("historyRelay") or "TO_COLLABORATOR"
            found.append(Collaborator(other, entry.get("instruction") or "", relay, other.pk.replace("-", "_")))
    return found


def _attachment(given: ModelInput) -> llm.Attachment:
    """A file as the model layer takes it: text as text, images as image input, anything else named only."""
    data = given.text.encode() if given.kind == "text" and given.text is not None else (given.data or b"")
    return llm.Attachment(name=given.file_name, mime_type=given.mime_type if given.kind != "text" else "text/plain", data=data)


def with_directives(system_prompt: str, chosen: list[Any]) -> str:
    """The system prompt with the chosen directives' instructions (docs/decisions.md: never in the stored message)."""
    block = "\n\n".join(directive.instructions for directive in chosen)
    return f"{system_prompt}\n\n<additional-instructions>\n{block}\n</additional-instructions>"
