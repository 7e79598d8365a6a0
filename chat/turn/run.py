"""Running an admitted turn, in a task of its own that outlives its client (docs/api.md, "Converse").

    wait for the session's ticket → `session` → directive selection → the reply with its tools
    (`delta`…, `trace`…) → verification → store the answer → `done` → `title`

Whatever fails, the client gets one `error` event and then the end of the events, what was
streamed is stored as the answer, marked with its `error` (so history stays user, assistant,
user…), and the session is handed to its next turn. A turn holds its session by a lease it
renews while it runs; one whose process died is skipped when the lease runs out.

A turn can be stopped from any process (chat.turn.replay): its reply is cancelled (the model
request closed, a running tool abandoned), what was streamed is stored as the answer with
`stopReason: "user"`, and `done` says `stopped: true`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson
from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from chat.approvals.serializers import ToolApprovalSerializer
from chat.approvals.services import pause_records, paused_turn_done
from chat.governance.usage import usage_count
from chat.sessions.titles import fallback_title, title_session, title_without_model
from chat.sessions.usage import usage_fields
from chat.turn import collaborators, replay
from chat.turn.admission import Admitted, GoingOn, admit_going_on
from chat.turn.events import Turn, TurnEvent, error_event
from chat.turn.handover import turn_finish, turn_finish_continued, turn_pause
from chat.turn.lock import TURN_LEASE, TurnClaim, turn_renew, turn_try_start
from chat.turn.prompt import SUPERVISOR_ROUTER, TurnContext, with_directives
from chat.turn.reply import Emit, Transcript, finished, respond, toolset, trace
from chat.turn.usage import Ledger, ms_since
from chat.turn.verification import verify
from chatplatform import inflight, llm, metrics, telemetry
from chatplatform.api.errors import ApiError, Code
from chatplatform.db import on_db_thread
from directives.selection import select

logger = logging.getLogger(__name__)

T = TypeVar("T")
STORE_RETRY_SECONDS = 10.0  # how long storing an answer is tried again while the database is unreachable
NO_TEXT = "(no answer: it failed before any text)"  # a failed, empty answer as history shows it to the model


def start(admitted: Admitted) -> Turn:
    """Run an admitted turn; its events come from the returned Turn (`reader()`). Leaving them
    early (a disconnect) does not stop the turn: it runs to the end and stores its answer. The
    paused turns its message superseded go on first (their tickets are taken before its own)."""
    for going in admitted.going_on:
        start_going_on(going)
    turn = replay.store().new_turn()
    control = Control(turn, chat_app_id=admitted.context.chat_app_id)
    task = asyncio.create_task(_run(admitted.context, admitted.claim, control), name="converse-turn")
    inflight.track(task)
    return turn


async def go_on(message_id: uuid.UUID, *, tool_events: bool = False) -> Turn:
    """Go on with a turn that paused for approvals, now that every one is decided (its decider
    claimed it: chat.approvals.services): the calls run or are refused, the model goes on, the
    answer is completed. Its events come from the returned Turn (with `tool_events`, its tool
    calls and results too: the AG-UI door)."""
    going = await on_db_thread(admit_going_on)(message_id)
    going.context.tool_events = tool_events
    return start_going_on(going)


def start_going_on(going: GoingOn) -> Turn:
    """Run a paused turn that goes on (admitted by admit_going_on)."""
    turn = replay.store().new_turn(first=going.state["lastEvent"] + 1)
    control = Control(turn, chat_app_id=going.context.chat_app_id, answer_id=going.message_id, continued=going.state)
    task = asyncio.create_task(_run(going.context, going.claim, control, paused=(going.state, going.decided)), name="converse-turn-goes-on")
    inflight.track(task)
    return turn


class Control:
    """A running turn's handle: its events, its answer's id, and its stop."""

    def __init__(
        self, turn: Turn, *, chat_app_id: str, answer_id: uuid.UUID | None = None, continued: dict[str, Any] | None = None
    ) -> None:
        self.turn = turn
        self.chat_app_id = chat_app_id  # whose usage counters the turn's usage adds to
        self.emit = turn.emit
        self.continued = continued  # the state of the paused turn this one goes on with
        # Chosen first: the `session` event names it, a retried store finds it taken.
        self.answer_id = answer_id or uuid.uuid4()
        self.stopped = False
        self._replying: asyncio.Task[Any] | None = None

    def stop(self) -> None:
        """End the reply under way (if any) as soon as possible; the turn stores what it streamed."""
        self.stopped = True
        if self._replying is not None:
            self._replying.cancel()

    async def interruptible(self, work: Awaitable[T]) -> T:
        """`work` in a task a stop cancels (the model's reply, its tools): a stop raises Stopped here."""
        if self.stopped:
            raise Stopped
        self._replying = asyncio.ensure_future(work)
        try:
            return await self._replying
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.stopped and not (current is not None and current.cancelling()):
                raise Stopped from None
            raise
        finally:
            self._replying = None


class Stopped(Exception):
    """The turn was stopped by its user."""


async def wait_for_running_turns() -> None:
    """Wait until every turn started on this event loop has finished (tests)."""
    await inflight.wait()


class _Failed(Exception):
    """The turn failed: `event` is what its client hears, `error` what its stored answer says."""

    def __init__(self, event: TurnEvent, *, store: bool = True) -> None:
        super().__init__(event.data.get("error"))
        self.event, self.store = event, store
        self.error = {"code": event.data.get("code") or Code.INTERNAL_ERROR, "message": event.data.get("error", "")}


Paused = tuple[dict[str, Any], dict[str, tuple[bool, str]]]  # a paused turn's state, and the decisions on its calls


async def _run(context: TurnContext, claim: TurnClaim, control: Control, paused: Paused | None = None) -> None:
    turn = {"chat.app_id": context.chat_app_id, "chat.agent_id": context.agent_id, "chat.message_id": str(control.answer_id)}
    if context.session_id is not None:
        turn["chat.session_id"] = str(context.session_id)
    with telemetry.span("chat.turn", turn):  # the root of the turn's trace (docs/deploy.md, "Traces")
        await _run_traced(context, claim, control, paused)


async def _run_traced(context: TurnContext, claim: TurnClaim, control: Control, paused: Paused | None) -> None:
    transcript, ledger = Transcript(control.emit), Ledger()
    lease: _Lease | None = None
    started = time.perf_counter()
    outcome = "failed"
    if paused is not None:
        transcript.restore(paused[0])
        ledger.restore(paused[0])
    try:
        try:
            claim = await _wait_for_ticket(context, claim)
            lease = _Lease(claim, control)
            await _answer(context, claim, transcript, ledger, started, control, paused)
            outcome = "stopped" if control.stopped else "done"
        except asyncio.CancelledError:
            outcome = "cancelled"
            failed = _Failed(
                error_event(ApiError("the server shut down before the answer was complete", code=Code.SERVICE_UNAVAILABLE, status_code=503))
            )
            await _fail(context, claim, control, transcript, ledger, started, failed)
            raise
        except _Failed as failed:
            await _fail(context, claim, control, transcript, ledger, started, failed)
        except llm.ModelError as exc:
            logger.warning("turn failed: %s", exc)
            ledger.calls.append((context.model, exc.usage))  # what was received counts
            message = f"the model provider failed: {exc}"
            await _fail(
                context,
                claim,
                control,
                transcript,
                ledger,
                started,
                _Failed(error_event(ApiError(message, code=Code.INTERNAL_ERROR, status_code=502))),
            )
        except Exception as exc:
            if not isinstance(exc, ApiError):
                logger.exception("turn failed")
            await _fail(context, claim, control, transcript, ledger, started, _Failed(error_event(exc)))
    finally:
        if lease is not None:
            lease.stop()
        metrics.turn_finished(outcome, time.perf_counter() - started)
        control.emit(None)
        if context.session_id is not None:
            replay.store().ended(context.session_id, control.turn)


async def _answer(
    context: TurnContext, claim: TurnClaim, transcript: Transcript, ledger: Ledger, started: float, control: Control, paused: Paused | None
) -> None:
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
    emit, session_id = transcript.emit, claim.session_id
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
    # A title that costs no model call is stored with the answer; a model's comes after `done`.
    title = fallback_title(context.message) if not claim.title and title_without_model() else None
    citations = transcript.citations.items if transcript.citations.searched else None
    titled = await _finish(
        claim, control, ledger, started, text=text, model=answer.model, verifications=verifications, title=title, citations=citations
    )
    transcript.stored = True
    done = {"success": True, "response": text, "sessionId": str(session_id), "messageId": str(control.answer_id), "usage": ledger.usage()}
    if citations is not None:
        done["citations"] = citations
    emit(TurnEvent("done", done))
    if title is None and not claim.title:
        title = await title_session(session_id=session_id, question=context.message, answer=text)
        titled = title is not None
    if titled:
        emit(TurnEvent("title", {"sessionId": str(session_id), "title": title}))


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
    citations = transcript.citations.items if transcript.citations.searched else None
    await _finish(claim, control, ledger, started, text=answer.text, model=answer.model, verifications=[], citations=citations)
    await on_db_thread(paused_turn_done)(message_id=control.answer_id)
    transcript.stored = True
    done = {
        "success": True,
        "response": answer.text,
        "sessionId": str(claim.session_id),
        "messageId": str(control.answer_id),
        "usage": ledger.usage(),
    }
    if citations is not None:
        done["citations"] = citations
    transcript.emit(TurnEvent("done", done))
    if not claim.title:
        title = await title_session(session_id=claim.session_id, question=context.message, answer=answer.text)
        if title is not None:
            transcript.emit(TurnEvent("title", {"sessionId": str(claim.session_id), "title": title}))


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
    citations = transcript.citations.items if transcript.citations.searched else None
    record = _answer_record(claim, control, ledger, started, text=answer.text, model=answer.model, citations=citations)
    await _stored(
        _counted,
        store=turn_pause,
        counted=_count_of(claim, control, record),
        paused=paused,
        approvals=approvals,
        answer=record,
        continued=control.continued is not None,
    )
    transcript.stored = True
    for approval in approvals:
        wire = ToolApprovalSerializer(approval).data
        transcript.emit(TurnEvent("approval", {key: wire[key] for key in ("approvalId", "toolId", "function", "arguments", "expiresAt")}))
    done = {
        "success": True,
        "response": answer.text,
        "sessionId": str(claim.session_id),
        "messageId": str(control.answer_id),
        "usage": ledger.usage(),
        "status": "awaiting_approval",
        "pendingApprovals": [str(approval.approval_id) for approval in approvals],
    }
    if citations is not None:
        done["citations"] = citations
    transcript.emit(TurnEvent("done", done))


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
    text = transcript.text
    citations = transcript.citations.items if transcript.citations.searched else None
    await _finish(
        claim, control, ledger, started, text=text, model=context.model, verifications=[], citations=citations, stop_reason="user"
    )
    transcript.stored = True
    done = {
        "success": True,
        "response": text,
        "sessionId": str(claim.session_id),
        "messageId": str(control.answer_id),
        "usage": ledger.usage(),
        "stopped": True,
    }
    if citations is not None:
        done["citations"] = citations
    transcript.emit(TurnEvent("done", done))


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


async def _wait_for_ticket(context: TurnContext, claim: TurnClaim) -> TurnClaim:
    """The claim once this turn may start: earlier turns of the session have finished."""
    delay = 0.01
    while not claim.served:
        # Another turn of this session runs (possibly in another process): poll its hand-over.
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.25)
        claim = await on_db_thread(turn_try_start)(claim=claim, message=context.message, files=context.files) or claim
    return claim


# --- Storing the answer ------------------------------------------------------------------------------


async def _stored(function: Callable[..., T], **kwargs: Any) -> T:
    """`function` on the database thread, tried again while the database is unreachable (each try
    on a connection checked first: chatplatform.db), for up to STORE_RETRY_SECONDS."""
    deadline, delay = time.monotonic() + STORE_RETRY_SECONDS, 0.1
    while True:
        try:
            return await on_db_thread(function)(**kwargs)
        except (OperationalError, InterfaceError):
            if time.monotonic() + delay > deadline:
                raise
            logger.warning("storing a turn failed: the database is unreachable; trying again in %.1f s", delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 1.0)


def _answer_record(
    claim: TurnClaim,
    control: Control,
    ledger: Ledger,
    started: float,
    *,
    text: str,
    model: str,
    verifications: list[dict[str, Any]] | None = None,
    title: str | None = None,
    error: dict[str, str] | None = None,
    citations: list[dict[str, Any]] | None = None,
    stop_reason: str | None = None,
) -> dict[str, Any]:
    """What storing the answer takes: turn_finish's arguments, or turn_finish_continued's for a
    turn that goes on after approvals (its answer stored when it paused)."""
    common = {
        "answer_id": control.answer_id,
        "session_id": claim.session_id,
        "ticket": claim.ticket,
        "text": text,
        "usage": ledger.usage(),
        "traces": ledger.traces,
        "error": error,
        "citations": citations,
        "stop_reason": stop_reason,
    }
    earlier = control.continued
    if earlier is None:
        return {
            **common,
            "user_id": claim.user_id,
            "model": model,
            "verifications": verifications or [],
            "execution_duration": ms_since(started),
            "title": title,
            "parent_id": claim.user_message.pk if claim.user_message is not None else None,
        }
    # The session's totals count what the turn used before it paused already.
    added = usage_fields(ledger.calls[len(earlier["calls"]) :])
    return {**common, "added_usage": added, "execution_duration": earlier["durationMs"] + ms_since(started)}


def _count_of(claim: TurnClaim, control: Control, record: dict[str, Any]) -> dict[str, Any]:
    """usage_count's arguments: the usage this store adds (a turn going on after approvals adds what
    it used since it paused; the rest was counted then)."""
    return {"user_id": claim.user_id, "chat_app_id": control.chat_app_id, "usage": record.get("added_usage", record["usage"])}


def _counted(*, store: Callable[..., T], counted: dict[str, Any], **record: Any) -> T:
    """`store` the answer and count its usage against the user's limits (chat.governance.usage), in
    one transaction: a store tried again after a lost connection never counts twice."""
    with transaction.atomic():
        stored = store(**record)
        usage_count(**counted)
    return stored


async def _finish(claim: TurnClaim, control: Control, ledger: Ledger, started: float, **answer: Any) -> bool:
    """Store the answer and hand the session on; whether the title was stored."""
    record = _answer_record(claim, control, ledger, started, **answer)
    try:
        counted = _count_of(claim, control, record)
        if control.continued is not None:
            await _stored(_counted, store=turn_finish_continued, counted=counted, **record)
            return False
        _, titled = await _stored(_counted, store=turn_finish, counted=counted, **record)
    except IntegrityError:
        titled = False  # an earlier try committed before its connection went
    except (OperationalError, InterfaceError) as exc:
        raise _Failed(error_event(exc), store=False) from exc
    return titled


async def _fail(
    context: TurnContext, claim: TurnClaim, control: Control, transcript: Transcript, ledger: Ledger, started: float, failed: _Failed
) -> None:
    """Tell the client, then store what was streamed as a failed answer (the session moves on with it)."""
    if transcript.stored:  # the answer and its `done` went out; only the title step failed
        logger.info("after the answer of session %s: %s", claim.session_id, failed.error["message"])
        return
    transcript.emit(failed.event)
    telemetry.failed(failed.error["message"])
    if not claim.served or not failed.store:
        return  # nothing of this turn was stored, or the database is gone: the lease runs out
    try:
        await _finish(claim, control, ledger, started, text=transcript.text, model=context.model, verifications=[], error=failed.error)
    except Exception:
        logger.exception("the failed answer of session %s could not be stored", claim.session_id)


class _Lease:
    """Renews the turn's hold on its session every TURN_LEASE / 3 while it runs (a timer, not a
    task, for the turns that end sooner, most of them), and its mark of life for other processes'
    readers (chat.turn.replay)."""

    def __init__(self, claim: TurnClaim, control: Control) -> None:
        self.claim, self.control = claim, control
        self.period = TURN_LEASE.total_seconds() / 3
        self.loop = asyncio.get_running_loop()
        self.handle: asyncio.TimerHandle | None = self.loop.call_later(self.period, self._due)
        self.renewing: asyncio.Task[None] | None = None

    def _due(self) -> None:
        self.renewing = self.loop.create_task(self._renew())
        self.handle = self.loop.call_later(self.period, self._due)

    async def _renew(self) -> None:
        replay.store().alive(str(self.control.answer_id))
        try:
            await on_db_thread(turn_renew)(session_id=self.claim.session_id, ticket=self.claim.ticket)
        except Exception:
            logger.warning("the lease of session %s could not be renewed", self.claim.session_id, exc_info=True)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        if self.renewing is not None:
            self.renewing.cancel()
