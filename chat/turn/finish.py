"""Storing a turn's answer (docs/api.md, "Converse"): the answer with its usage, traces and
citations, the usage counted against the user's limits in the same transaction, and the session
handed to its next ticket (chat.turn.handover). The database may be briefly unreachable: a store is
tried again for up to STORE_RETRY_SECONDS, and one that committed before its connection went is
not stored twice."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import IntegrityError, InterfaceError, OperationalError, transaction

from chat.governance.usage import usage_count
from chat.sessions.usage import usage_fields
from chat.turn.control import Control, Failed
from chat.turn.events import error_event
from chat.turn.handover import turn_finish, turn_finish_continued
from chat.turn.lock import TurnClaim
from chat.turn.usage import Ledger, ms_since
from chatplatform.db import on_db_thread

logger = logging.getLogger(__name__)

T = TypeVar("T")
STORE_RETRY_SECONDS = 10.0  # how long storing an answer is tried again while the database is unreachable


async def stored(function: Callable[..., T], **kwargs: Any) -> T:
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


def answer_record(
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


def count_of(claim: TurnClaim, control: Control, record: dict[str, Any]) -> dict[str, Any]:
    """usage_count's arguments: the usage this store adds (a turn going on after approvals adds what
    it used since it paused; the rest was counted then)."""
    return {"user_id": claim.user_id, "chat_app_id": control.chat_app_id, "usage": record.get("added_usage", record["usage"])}


def store_counted(*, store: Callable[..., T], counted: dict[str, Any], **record: Any) -> T:
    """`store` the answer and count its usage against the user's limits (chat.governance.usage), in
    one transaction: a store tried again after a lost connection never counts twice."""
    with transaction.atomic():
        result = store(**record)
        usage_count(**counted)
    return result


async def finish(claim: TurnClaim, control: Control, ledger: Ledger, started: float, **answer: Any) -> bool:
    """Store the answer and hand the session on; whether the title was stored."""
    record = answer_record(claim, control, ledger, started, **answer)
    try:
        counted = count_of(claim, control, record)
        if control.continued is not None:
            await stored(store_counted, store=turn_finish_continued, counted=counted, **record)
            return False
        _, titled = await stored(store_counted, store=turn_finish, counted=counted, **record)
    except IntegrityError:
        titled = False  # an earlier try committed before its connection went
    except (OperationalError, InterfaceError) as exc:
        raise Failed(error_event(exc), store=False) from exc
    return titled
