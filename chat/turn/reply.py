"""The model and what it may use in a turn: the agent's tools, its knowledge bases, its collaborators;
one streamed reply through the tool loop, the same for the turn's agent and for a collaborator.

The loop itself is the model layer's (`chatplatform.llm.stream_reply`, the same for every
provider); here the turn decides what the model is given and what becomes of what comes back:
each text delta an event, each tool call, lookup and collaboration a trace.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from chat.sessions.traces import FAILED, trace_for_users
from chat.turn import collaborators, knowledge, replay
from chat.turn.events import TurnEvent
from chat.turn.prompt import TurnContext
from chat.turn.usage import Ledger, ms_since
from chatplatform import llm
from tools.toolset import build_toolset

Emit = Callable[[TurnEvent | None], None]


class Transcript:
    """The answer's text as streamed to the client, each delta an event; kept so that a turn that
    fails midway stores what the user already saw. A silent one (a collaborator's answer, which
    becomes a tool result) keeps the text and emits nothing."""

    def __init__(self, emit: Emit, citations: knowledge.Citations | None = None) -> None:
        self.emit = emit
        self.parts: list[str] = []
        self.citations = citations or knowledge.Citations()
        self.stored = False  # the answer is stored: what fails after it (the title) fails nothing

    def delta(self, text: str) -> None:
        self.parts.append(text)
        self.emit(TurnEvent("delta", {"text": text}))

    def restore(self, state: dict[str, Any]) -> None:
        """What a paused turn had streamed and cited, for the turn that goes on with it."""
        self.parts = [state["text"]] if state["text"] else []
        kept = state["citations"]
        self.citations = knowledge.Citations(items=list(kept["items"]), searched=kept["searched"])

    def silent(self) -> Transcript:
        return Transcript(_nothing)

    @property
    def text(self) -> str:
        return "".join(self.parts)


def _nothing(event: TurnEvent | None) -> None:
    pass


def trace(emit: Emit, context: TurnContext, record: dict[str, Any]) -> None:
    """A stage's trace as a `trace` event, when the traces feature is on: as a chat user sees it."""
    if context.on("traces"):
        emit(TurnEvent("trace", trace_for_users(record)))


def toolset(
    context: TurnContext, ledger: Ledger, transcript: Transcript, *, history: list[llm.HistoryMessage], with_approvals: bool = False
) -> list[llm.ToolSpec]:
    """What the model may call: the agent's tools this user may use, a search function per
    knowledge base of strategy `tool`, a function per collaborator (docs/api.md, "Tools").
    Each call is recorded in the answer's traces. A name taken already is not offered twice.
    `with_approvals`: a call that needs a person's approval pauses the reply (the turn's own
    agent's reply only; elsewhere such a call is refused)."""

    def record(wire: dict[str, Any]) -> None:
        ledger.traces.append(wire)
        trace(transcript.emit, context, wire)

    event_base = {
        "userId": context.user.pk,
        "sessionId": str(context.session_id),
        "chatAppId": context.chat_app_id,
        "agentId": context.agent_id,
        "customData": dict(context.user.custom_data or {}),
        "timezone": context.timezone,
    }
    specs = build_toolset(
        context.tools,
        context.tool_ids,
        user=context.user_fields,
        event_base=event_base,
        on_trace=lambda call: record(call.as_wire()),
        allowed_tags=context.tool_tags,
        with_approvals=with_approvals,
    ).specs
    specs += knowledge.search_tools(context.knowledge, transcript.citations, record)
    specs += collaborators.tools(
        context,
        history=history,
        ledger=ledger,
        transcript=transcript,
        respond=respond,
        on_trace=lambda wire: trace(transcript.emit, context, wire),
    )
    if context.depth == 0:
        specs += [client_tool(context, tool) for tool in context.client_tools]
    offered: dict[str, llm.ToolSpec] = {}
    for spec in specs:
        offered.setdefault(spec.name, spec)
    return list(offered.values())


def client_tool(context: TurnContext, tool: dict[str, Any]) -> llm.ToolSpec:
    """A tool of the AG-UI client (docs/doors.md, "AG-UI"): its call waits, the turn running on, for
    the result the client sends in its next run."""

    async def call(arguments: dict[str, Any]) -> str:
        assert context.session_id is not None  # set before the reply starts
        return await replay.store().client_result(context.session_id, llm.CALL_ID.get())

    parameters = tool.get("parameters") or {"type": "object", "properties": {}}
    return llm.ToolSpec(tool["name"], tool.get("description") or "", parameters, call, timeout=settings.CHAT_CLIENT_TOOL_SECONDS)


async def stream(
    transcript: Transcript,
    *,
    model: str,
    system_prompt: str,
    history: list[llm.HistoryMessage],
    message: str,
    tools: list[llm.ToolSpec],
    attachments: tuple[llm.Attachment, ...] = (),
    tool_events: bool = False,
) -> llm.ReplyDone | llm.ReplyPaused:
    """One streamed reply with the tool loop, each delta emitted as it arrives (with `tool_events`,
    each tool call and its result too); ReplyPaused when a call waits for a person's approval."""
    events = llm.stream_reply(
        model=model,
        system_prompt=system_prompt,
        history=history,
        message=message,
        attachments=attachments,
        tools=tools or None,
        max_round_trips=settings.CHAT_TOOL_MAX_ROUND_TRIPS,
        on_text=transcript.delta,
    )
    return await finished(events, model, transcript.emit if tool_events else None)


async def finished(events: Any, model: str, emit: Emit | None = None) -> llm.ReplyDone | llm.ReplyPaused:
    async for event in events:
        if isinstance(event, llm.ReplyDone | llm.ReplyPaused):
            return event
        if emit is not None:
            tool_event(emit, event)
    raise llm.ModelError(f"{model}: the reply ended without finishing")


def tool_event(emit: Emit, event: Any) -> None:
    """A call the model asked for (`tool_call`, before it runs) and its result (`tool_result`, the
    text the model reads; a failure as a chat user sees it, chat.sessions.traces)."""
    if isinstance(event, llm.ToolCallEvent):
        emit(TurnEvent("tool_call", {"callId": event.call_id, "name": event.name, "arguments": event.arguments}))
    elif isinstance(event, llm.ToolResultEvent):
        result = event.result if isinstance(event.result, str) else json.dumps(event.result, default=str)
        content = result if event.error is None else f"error: {FAILED}"
        emit(TurnEvent("tool_result", {"callId": event.call_id, "name": event.name, "content": content, "error": event.error is not None}))


async def respond(
    context: TurnContext,
    transcript: Transcript,
    ledger: Ledger,
    *,
    history: list[llm.HistoryMessage],
    message: str,
    system_prompt: str | None = None,
) -> llm.ReplyDone | llm.ReplyPaused:
    """The agent's answer to `message`: knowledge bases of strategy `always` searched first, then
    the model with everything it may call. The turn's agent and each collaborator answer here;
    only the turn's own agent's answer may pause for approvals (ReplyPaused)."""

    def record(wire: dict[str, Any]) -> None:
        ledger.traces.append(wire)
        trace(transcript.emit, context, wire)

    tools = toolset(context, ledger, transcript, history=history, with_approvals=context.depth == 0)
    with_results = await knowledge.with_results(context.knowledge, message, transcript.citations, record)
    started = time.perf_counter()
    answer = await stream(
        transcript,
        model=context.model,
        system_prompt=system_prompt if system_prompt is not None else context.system_prompt,
        history=history,
        message=with_results,
        tools=tools,
        attachments=context.attachments,
        tool_events=context.tool_events and context.depth == 0,
    )
    trace(transcript.emit, context, ledger.add("model", answer.model, answer.usage, ms_since(started)))
    return answer
