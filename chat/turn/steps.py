"""A turn's steps once it holds its session (docs/api.md, "Converse"): the `session` event, the
directives the selection model chooses, the reply (the model's with its tools, or a collaborator's),
verification, the stored answer, `done` and the title. A turn that paused for approvals goes on from
its stored state; one whose model asks for a call that waits for a person pauses; one its user
stops stores what it streamed. Each ends with its `done` event."""

from __future__ import annotations

import time
from typing import Any

import orjson
from django.conf import settings
from django.utils import timezone

from chat.approvals.serializers import ToolApprovalSerializer
from chat.approvals.services import pause_records, paused_turn_done
from chat.sessions.titles import fallback_title, title_session, title_without_model
from chat.turn import collaborators, replay
from chat.turn.control import Control, Stopped
from chat.turn.events import TurnEvent
from chat.turn.finish import answer_record, count_of, finish, store_counted, stored
from chat.turn.handover import turn_pause
from chat.turn.lock import TurnClaim
from chat.turn.prompt import SUPERVISOR_ROUTER, TurnContext, with_directives
from chat.turn.reply import Emit, Transcript, finished, respond, toolset, trace
from chat.turn.usage import Ledger, ms_since
from chat.turn.verification import verify
from chatplatform import llm, telemetry
from chatplatform.db import on_db_thread
from directives.selection import select

NO_TEXT = "(no answer: it failed before any text)"  # a failed, empty answer as history shows it to the model

Paused = tuple[dict[str, Any], dict[str, tuple[bool, str]]]  # a paused turn's state, and the decisions on its calls


async def answer_turn(
    context: TurnContext, claim: TurnClaim, transcript: Transcript, ledger: Ledger, started: float, control: Control, paused: Paused | None
) -> None:
    """The turn, once it holds its session: a new one replies, a `paused` one goes on; a stop ends either."""
    emit = transcript.emit
    session_id = context.session_id = claim.session_id
    telemetry.annotate({"chat.session_id": str(session_id)})
    user_message_id = str(claim.user_message.pk) if claim.user_message is not None else paused[0]["userMessageId"] if paused else ""
    emit(TurnEvent("session", {"sessionId": str(session_id), "userMessageId": user_message_id, "messageId": str(control.answer_id)}))
    replay.store().started(session_id, control.turn, control.stop)
    try:
        if paused is None:
            await _reply(context, claim, transcript, ledger, started, control)
        else:
            await _go_on(context, claim, transcript, ledger, started, control, *paused)
    except Stopped:
        await _stopped(context, claim, transcript, ledger, started, control)


async def _reply(context: TurnContext, claim: TurnClaim, transcript: Transcript, ledger: Ledger, started: float, control: Control) -> None:
    emit = transcript.emit
    history = [llm.HistoryMessage("user" if source == "user" else "assistant", text or NO_TEXT) for source, text in claim.history]
    system_prompt = await control.interruptible(_with_chosen_directives(context, ledger, emit))
    routed = None
    if context.collaboration == SUPERVISOR_ROUTER and context.collaborators:
        routed = await control.interruptible(collaborators.route(context, ledger))
        trace(emit, context, ledger.traces[-1])
    answer: llm.ReplyDone | llm.ReplyPaused
    if routed is not None:  # the collaborator answers the user itself
        relayed = history if routed.history_relay == "TO_COLLABORATOR" else []
        answer = await control.interruptible(
            collaborators.invoke(
                context, routed, request=context.message, history=relayed, transcript=transcript, ledger=ledger, respond=respond
            )
        )
        trace(emit, context, ledger.traces[-1])
    else:
        answer = await control.interruptible(
            respond(context, transcript, ledger, history=history, message=context.message, system_prompt=system_prompt)
        )
        if isinstance(answer, llm.ReplyPaused):
            await _pause(context, claim, transcript, ledger, started, control, answer, system_prompt, user_message=claim.user_message)
            return
    verifications: list[dict[str, Any]] = []
    text = answer.text
    if context.on("verifyResponse"):
        tools = toolset(context, ledger, transcript, history=history)
        with telemetry.span("verify"):
            text, verifications = await control.interruptible(
                verify(transcript, context, ledger, system_prompt=system_prompt, history=history, answer=text, tools=tools)
            )
    await _answered(context, claim, transcript, ledger, started, control, text=text, model=answer.model, verifications=verifications)


async def _go_on(
    context: TurnContext,
    claim: TurnClaim,
    transcript: Transcript,
    ledger: Ledger,
    started: float,
    control: Control,
    state: dict[str, Any],
    decided: dict[str, tuple[bool, str]],
) -> None:
    """The rest of a paused turn: its decided calls run (or are refused), the model goes on."""
    tools = toolset(context, ledger, transcript, history=[], with_approvals=True)
    events = llm.continue_reply(
        model=context.model,
        system_prompt=state["systemPrompt"],
        messages=llm.messages_from_json(state["messages"]),
        decided=decided,
        round_trips=state["roundTrips"],
        tools=tools,
        max_round_trips=settings.CHAT_TOOL_MAX_ROUND_TRIPS,
        on_text=transcript.delta,
        text_so_far=state["text"],
    )
    model_started = time.perf_counter()
    answer = await control.interruptible(finished(events, context.model, transcript.emit if context.tool_events else None))
    trace(transcript.emit, context, ledger.add("model", answer.model, answer.usage, ms_since(model_started)))
    if isinstance(answer, llm.ReplyPaused):
        await _pause(context, claim, transcript, ledger, started, control, answer, state["systemPrompt"])
        return
    await _answered(context, claim, transcript, ledger, started, control, text=answer.text, model=answer.model, verifications=[])


async def _answered(
    context: TurnContext,
    claim: TurnClaim,
    transcript: Transcript,
    ledger: Ledger,
    started: float,
    control: Control,
    *,
    text: str,
    model: str,
    verifications: list[dict[str, Any]],
) -> None:
    """The answer stored, `done`, then the title of a session that has none: one that costs no
    model call is stored with the answer, a model's comes after `done`."""
    title = fallback_title(context.message) if not claim.title and title_without_model() else None
    citations = _citations(transcript)
    titled = await finish(
        claim, control, ledger, started, text=text, model=model, verifications=verifications, title=title, citations=citations
    )
    if control.continued is not None:  # a paused turn that went on: what it needed is no longer kept
        await on_db_thread(paused_turn_done)(message_id=control.answer_id)
    transcript.stored = True
    _done(transcript, claim, control, ledger, text, citations)
    if title is None and not claim.title:
        title = await title_session(session_id=claim.session_id, question=context.message, answer=text)
        titled = title is not None
    if titled:
        transcript.emit(TurnEvent("title", {"sessionId": str(claim.session_id), "title": title}))


def _citations(transcript: Transcript) -> list[dict[str, Any]] | None:
    return transcript.citations.items if transcript.citations.searched else None


def _done(
    transcript: Transcript,
    claim: TurnClaim,
    control: Control,
    ledger: Ledger,
    text: str,
    citations: list[dict[str, Any]] | None,
    **more: Any,
) -> None:
    """The turn's `done` event (docs/api.md, "Converse"): every ending says the same, and `more`."""
    done = {
        "success": True,
        "response": text,
        "sessionId": str(claim.session_id),
        "messageId": str(control.answer_id),
        "usage": ledger.usage(),
        **more,
    }
    if citations is not None:
        done["citations"] = citations
    transcript.emit(TurnEvent("done", done))


async def _pause(
    context: TurnContext,
    claim: TurnClaim,
    transcript: Transcript,
    ledger: Ledger,
    started: float,
    control: Control,
    answer: llm.ReplyPaused,
    system_prompt: str,
    *,
    user_message: Any = None,
) -> None:
    """The model asked for calls that wait for a person: store the answer so far and what the turn
    needs to go on, tell the client which approvals it waits for, and end the stream."""
    calls = [
        {
            "callId": call.id,
            "toolId": approval["toolId"],
            "function": call.name,
            "arguments": _arguments_of(call.arguments),
            "timeoutSeconds": approval["timeoutSeconds"],
            "approverRoles": approval["approverRoles"],
        }
        for call, approval in answer.pending
    ]
    earlier = control.continued or {}
    state = {
        "request": orjson.loads(orjson.dumps(context.request, default=str)),
        "userMessageId": str(user_message.pk) if user_message is not None else earlier.get("userMessageId", ""),
        "systemPrompt": system_prompt,
        "messages": llm.messages_to_json(answer.messages),
        "roundTrips": answer.round_trips,
        "text": answer.text,
        "calls": [[model, usage.input_tokens, usage.output_tokens, usage.requests] for model, usage in ledger.calls],
        "traces": ledger.traces,
        "citations": {"items": transcript.citations.items, "searched": transcript.citations.searched},
        "durationMs": earlier.get("durationMs", 0) + ms_since(started),
        "lastEvent": control.turn.last + len(calls) + 1,  # the approvals, then `done`
    }
    paused, approvals = pause_records(
        session_id=claim.session_id, message_id=control.answer_id, state=state, calls=calls, now=timezone.now()
    )
    citations = _citations(transcript)
    record = answer_record(claim, control, ledger, started, text=answer.text, model=answer.model, citations=citations)
    await stored(
        store_counted,
        store=turn_pause,
        counted=count_of(claim, control, record),
        paused=paused,
        approvals=approvals,
        answer=record,
        continued=control.continued is not None,
    )
    transcript.stored = True
    for approval in approvals:
        wire = ToolApprovalSerializer(approval).data
        transcript.emit(TurnEvent("approval", {key: wire[key] for key in ("approvalId", "toolId", "function", "arguments", "expiresAt")}))
    _done(
        transcript, claim, control, ledger, answer.text, citations,
        status="awaiting_approval", pendingApprovals=[str(approval.approval_id) for approval in approvals],
    )  # fmt: skip


def _arguments_of(text: str) -> dict[str, Any]:
    try:
        arguments = orjson.loads(text or "{}")
    except orjson.JSONDecodeError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


async def _stopped(
    context: TurnContext, claim: TurnClaim, transcript: Transcript, ledger: Ledger, started: float, control: Control
) -> None:
    """Store what was streamed as the answer, stopped by the user, and say so in `done`."""
    text, citations = transcript.text, _citations(transcript)
    await finish(claim, control, ledger, started, text=text, model=context.model, verifications=[], citations=citations, stop_reason="user")
    transcript.stored = True
    _done(transcript, claim, control, ledger, text, citations, stopped=True)


async def _with_chosen_directives(context: TurnContext, ledger: Ledger, emit: Emit) -> str:
    """The system prompt with the directives the selection model chose (docs/api.md, "The system prompt")."""
    if not context.candidates:
        return context.system_prompt
    with telemetry.span("directives.select") as span:
        selection = await select(
            candidates=context.candidates,
            query=context.message,
            model=settings.CHAT_SELECTION_MODEL,
            timeout=settings.CHAT_SELECTION_TIMEOUT_SECONDS,
        )
        telemetry.set_attributes(span, {"chat.directives.chosen": [d.directive_id for d in selection.chosen]})
    details: dict[str, Any] = {
        "candidates": [d.directive_id for d in context.candidates],
        "chosen": [d.directive_id for d in selection.chosen],
    }
    if selection.error:
        details["error"] = selection.error
    trace(emit, context, ledger.add("selection", selection.model, selection.usage, selection.duration_ms, **details))
    return with_directives(context.system_prompt, selection.chosen) if selection.chosen else context.system_prompt
