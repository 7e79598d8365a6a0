"""The model and its tools in a turn: the toolset offered, and one streamed reply through the tool loop.

The loop itself is the model layer's (`chatplatform.llm.stream_reply`, the same for every
provider); here the turn decides what it is given (the agent's tools this user may use) and
what it makes of what comes back: each text delta an event, each tool call a trace.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from django.conf import settings

from chat.turn.events import TurnEvent
from chat.turn.prompt import TurnContext
from chat.turn.usage import Ledger
from chatplatform import llm
from tools.toolset import ToolTrace, build_toolset

Emit = Callable[[TurnEvent | None], None]


class Transcript:
    """The answer's text as streamed to the client, each delta an event; kept so that a turn that
    fails midway stores what the user already saw."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.parts: list[str] = []

    def delta(self, text: str) -> None:
        self.parts.append(text)
        self.emit(TurnEvent("delta", {"text": text}))

    @property
    def text(self) -> str:
        return "".join(self.parts)


def trace(emit: Emit, context: TurnContext, record: dict[str, Any]) -> None:
    """A stage's trace as a `trace` event, when the traces feature is on."""
    if context.on("traces"):
        emit(TurnEvent("trace", dict(record)))


def toolset(context: TurnContext, session_id: uuid.UUID, ledger: Ledger, emit: Emit) -> list[llm.ToolSpec]:
    """The agent's tools this user may use (CONTRACT §7), each call recorded in the answer's traces."""

    def on_trace(call: ToolTrace) -> None:
        wire = call.as_wire()
        ledger.traces.append(wire)
        trace(emit, context, wire)

    event_base = {
        "userId": context.user.pk,
        "sessionId": str(session_id),
        "chatAppId": context.chat_app_id,
        "agentId": context.agent_id,
        "customData": dict(context.user.custom_data or {}),
        "timezone": context.timezone,
    }
    built = build_toolset(
        context.tools, context.tool_ids, user=context.user_fields, event_base=event_base, on_trace=on_trace, allowed_tags=context.tool_tags
    )
    return built.specs


async def stream(
    transcript: Transcript,
    *,
    model: str,
    system_prompt: str,
    history: list[llm.HistoryMessage],
    message: str,
    tools: list[llm.ToolSpec],
    attachments: tuple[llm.Attachment, ...] = (),
) -> llm.ReplyDone:
    """One streamed reply with the tool loop, each delta emitted as it arrives."""
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
    async for event in events:
        if isinstance(event, llm.ReplyDone):
            return event
    raise llm.ModelError(f"{model}: the reply ended without finishing")
