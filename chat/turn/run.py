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

from chat.turn import replay
from chat.turn.admission import Admitted, GoingOn, admit_going_on
from chat.turn.control import Control, Failed
from chat.turn.events import Turn, error_event
from chat.turn.finish import finish
from chat.turn.lock import TURN_LEASE, TurnClaim, turn_renew, turn_try_start
from chat.turn.prompt import TurnContext
from chat.turn.reply import Transcript
from chat.turn.steps import Paused, answer_turn
from chat.turn.usage import Ledger
from chatplatform import inflight, llm, metrics, telemetry
from chatplatform.api.errors import ApiError, Code
from chatplatform.db import on_db_thread

logger = logging.getLogger(__name__)


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


async def wait_for_running_turns() -> None:
    """Wait until every turn started on this event loop has finished (tests)."""
    await inflight.wait()


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
            await answer_turn(context, claim, transcript, ledger, started, control, paused)
            outcome = "stopped" if control.stopped else "done"
        except asyncio.CancelledError:
            outcome = "cancelled"
            failed = Failed(
                error_event(ApiError("the server shut down before the answer was complete", code=Code.SERVICE_UNAVAILABLE, status_code=503))
            )
            await _fail(context, claim, control, transcript, ledger, started, failed)
            raise
        except Failed as failed:
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
                Failed(error_event(ApiError(message, code=Code.INTERNAL_ERROR, status_code=502))),
            )
        except Exception as exc:
            if not isinstance(exc, ApiError):
                logger.exception("turn failed")
            await _fail(context, claim, control, transcript, ledger, started, Failed(error_event(exc)))
    finally:
        if lease is not None:
            lease.stop()
        metrics.turn_finished(outcome, time.perf_counter() - started)
        control.emit(None)
        if context.session_id is not None:
            replay.store().ended(context.session_id, control.turn)


async def _wait_for_ticket(context: TurnContext, claim: TurnClaim) -> TurnClaim:
    """The claim once this turn may start: earlier turns of the session have finished."""
    delay = 0.01
    while not claim.served:
        # Another turn of this session runs (possibly in another process): poll its hand-over.
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.25)
        claim = await on_db_thread(turn_try_start)(claim=claim, message=context.message, files=context.files) or claim
    return claim


async def _fail(
    context: TurnContext, claim: TurnClaim, control: Control, transcript: Transcript, ledger: Ledger, started: float, failed: Failed
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
        await finish(claim, control, ledger, started, text=transcript.text, model=context.model, verifications=[], error=failed.error)
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
