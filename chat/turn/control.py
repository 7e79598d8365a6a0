"""A running turn's handle, which its stop goes through (docs/api.md, "Resume, stop and
approvals"), and the two ways a turn ends early: `Stopped` by its user, `Failed` with the `error`
event its client hears and the error its stored answer carries."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

from chat.turn.events import Turn, TurnEvent
from chatplatform.api.errors import Code

T = TypeVar("T")


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


class Failed(Exception):
    """The turn failed: `event` is what its client hears, `error` what its stored answer says."""

    def __init__(self, event: TurnEvent, *, store: bool = True) -> None:
        super().__init__(event.data.get("error"))
        self.event, self.store = event, store
        self.error = {"code": event.data.get("code") or Code.INTERNAL_ERROR, "message": event.data.get("error", "")}
