"""Collaborating agents (docs/api.md, "Collaborating agents"): a supervising agent hands parts of a request to other agents.

    SUPERVISOR          each collaborator is a function `<agentId>(request)` of the supervisor's
                        model; a call runs the collaborator's own turn (its prompt, model, tools,
                        knowledge bases, collaborators) through the same code as the turn itself,
                        and its answer is the function's result
    SUPERVISOR_ROUTER   the selection model names one collaborator, which answers the user itself
                        (streamed as the turn's deltas); none named: as SUPERVISOR
    DISABLED            none offered

History goes to a collaborator per its `historyRelay`: TO_COLLABORATOR the conversation so far,
TO_AGENT only the request. A nested call's usage counts in the turn's; its traces travel inside
its `agentCollaboratorInvocationOutput` trace. A collaborator that fails is a tool error.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

from chat.sessions.usage import usage_fields
from chat.turn import prompt
from chat.turn.definitions import turn_definitions
from chat.turn.prompt import Collaborator, TurnContext
from chat.turn.usage import Ledger
from chatplatform import llm
from chatplatform.db import on_db_thread

REQUEST_SCHEMA = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "What this agent should do, with what it needs to know"}},
    "required": ["request"],
    "additionalProperties": False,
}
ROUTING_PROMPT = (
    "You route a user's message to the one agent best able to answer it. The agents:\n\n{agents}\n\n"
    "Answer with the agent's id inside <answer></answer>, or <answer>SUPERVISOR</answer> when none of them fits "
    "or the message needs several of them."
)
_ANSWER = re.compile(r"<answer>\s*([^<]*?)\s*</answer>", re.IGNORECASE | re.DOTALL)

# reply.respond, given by the caller: the one way a turn's agent (or a collaborator) answers.
Respond = Callable[..., Awaitable[llm.ReplyDone | llm.ReplyPaused]]


def relayed_history(collaborator: Collaborator, history: list[llm.HistoryMessage], message: str) -> list[llm.HistoryMessage]:
    if collaborator.history_relay == "TO_AGENT":
        return []
    return [*history, llm.HistoryMessage("user", message)]


async def invoke(
    parent: TurnContext,
    collaborator: Collaborator,
    *,
    request: str,
    history: list[llm.HistoryMessage],
    transcript: Any,
    ledger: Ledger,
    respond: Respond,
) -> llm.ReplyDone:
    """The collaborator's own turn on `request`; its usage added to `ledger`, its trace recorded there."""
    started, nested = time.perf_counter(), Ledger()
    context = await on_db_thread(_context)(parent, collaborator)
    try:
        answer = await respond(context, transcript, nested, history=history, message=request)
        assert isinstance(answer, llm.ReplyDone)  # only the turn's own agent pauses for approvals
    finally:
        ledger.calls += nested.calls
    invocation = {
        "agentId": collaborator.agent.pk,
        "request": request,
        "response": answer.text,
        "usage": usage_fields(nested.calls),
        "traces": nested.traces,
    }
    ledger.traces.append(
        {
            "stage": "collaborator",
            "durationMs": round((time.perf_counter() - started) * 1000),
            "agentCollaboratorInvocationOutput": invocation,
        }
    )
    return answer


def _context(parent: TurnContext, collaborator: Collaborator) -> TurnContext:
    context = prompt.for_agent(parent, collaborator.agent, turn_definitions.reader(), depth=parent.depth + 1)
    # A collaborator neither chooses directives again nor sees the user's files: its request says what it needs.
    context.candidates, context.attachments = [], ()
    return context


def tools(
    context: TurnContext,
    *,
    history: list[llm.HistoryMessage],
    ledger: Ledger,
    transcript: Any,
    respond: Respond,
    on_trace: Callable[[dict], None],
) -> list[llm.ToolSpec]:
    """A function per collaborator (SUPERVISOR, and SUPERVISOR_ROUTER when the router named none)."""
    if context.collaboration == prompt.DISABLED:
        return []

    def spec(collaborator: Collaborator) -> llm.ToolSpec:
        async def call(arguments: dict[str, Any]) -> str:
            request = str(arguments.get("request") or "").strip()
            if not request:
                raise ValueError("request: say what the agent should do")
            answer = await invoke(
                context,
                collaborator,
                request=request,
                history=relayed_history(collaborator, history, context.message),
                transcript=transcript.silent(),
                ledger=ledger,
                respond=respond,
            )
            on_trace(ledger.traces[-1])
            return answer.text

        return llm.ToolSpec(
            name=collaborator.tool_name, description=collaborator.instruction, parameters_json_schema=REQUEST_SCHEMA, call=call
        )

    return [spec(collaborator) for collaborator in context.collaborators]


async def route(context: TurnContext, ledger: Ledger) -> Collaborator | None:
    """SUPERVISOR_ROUTER: the collaborator the selection model names for the user's message, or None
    (it named the supervisor, answered something else, or failed)."""
    agents = "\n".join(f"- {c.agent.pk}: {c.instruction}" for c in context.collaborators)
    started, model = time.perf_counter(), settings.CHAT_SELECTION_MODEL
    try:
        answer = await llm.complete(
            model=model,
            system_prompt=ROUTING_PROMPT.format(agents=agents),
            prompt=context.message,
            timeout=settings.CHAT_SELECTION_TIMEOUT_SECONDS,
        )
    except llm.ModelError as exc:
        ledger.traces.append(
            {"stage": "routing", "model": model, "durationMs": round((time.perf_counter() - started) * 1000), "error": str(exc)}
        )
        return None
    named = _ANSWER.search(answer.text)
    chosen = next((c for c in context.collaborators if named and c.agent.pk == named.group(1)), None)
    trace = ledger.add("routing", model, answer.usage, round((time.perf_counter() - started) * 1000))
    trace["routing"] = {"agentId": chosen.agent.pk if chosen else "SUPERVISOR"}
    return chosen
