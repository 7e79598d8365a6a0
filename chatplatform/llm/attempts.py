"""One model request of the tool loop: watched for silence, and sent again when its failure may pass.

The first token (of text or of a tool call) must come within CHAT_MODEL_FIRST_TOKEN_TIMEOUT
seconds and no gap between tokens may last longer than CHAT_MODEL_IDLE_TIMEOUT. A request that
failed before its first token is sent again (at most MAX_RETRIES times, with backoff) when the
failure may pass: a connection error, 429 or 5xx. Once text has streamed it is never sent again:
the user would read the beginning twice.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from django.conf import settings

from chatplatform.llm.providers import for_ref
from chatplatform.llm.types import ModelError, ModelRequest, ModelResponse, Sink, Usage, estimate_tokens
from chatplatform.model_names import ModelRef

logger = logging.getLogger(__name__)

MAX_RETRIES = 2


@asynccontextmanager
async def _watched(sink: Sink, model: str) -> AsyncIterator[None]:
    """Fail the block when the first chunk is late or the stream goes quiet. One timer for the
    whole response, moved on only when it fires (a chunk costs two attribute writes, no timer)."""
    loop = asyncio.get_running_loop()
    first, idle = settings.CHAT_MODEL_FIRST_TOKEN_TIMEOUT, settings.CHAT_MODEL_IDLE_TIMEOUT
    started = loop.time()
    try:
        async with asyncio.timeout(None) as deadline:
            handle: asyncio.TimerHandle  # bound below, moved on by check()

            def check() -> None:
                nonlocal handle
                now = loop.time()
                due = sink.last_activity + idle if sink.received else started + first
                if now >= due:
                    deadline.reschedule(now)
                else:  # before the first token, look again within `idle`: a token may start the idle bound
                    handle = loop.call_at(due if sink.received else min(due, now + idle), check)

            handle = loop.call_at(started + min(first, idle), check)
            try:
                yield
            finally:
                handle.cancel()
    except TimeoutError:
        if sink.received:
            raise ModelError(f"{model}: the answer stalled: nothing came for {idle:g} s") from None
        raise ModelError(f"{model}: no answer within {first:g} s") from None


def _backoff(attempt: int) -> float:
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


async def with_retries(model: str, attempt_once: Callable[[], Awaitable[Any]], received: Callable[[], bool]) -> Any:
    for attempt in range(MAX_RETRIES + 1):
        try:
            return await attempt_once()
        except ModelError as exc:
            if received() or not exc.retryable or attempt == MAX_RETRIES:
                raise
            delay = exc.retry_after if exc.retry_after is not None else _backoff(attempt)
            logger.info("%s; sending the request again in %.2f s", exc, delay)
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")


async def respond(ref: ModelRef, request: ModelRequest, on_text: Callable[[str], None], text_so_far: Callable[[], str]) -> ModelResponse:
    """The provider's response to `request`, its text handed to `on_text` as it streams."""
    provider = for_ref(ref)
    loop = asyncio.get_running_loop()
    sink = Sink(on_text, clock=loop.time)

    async def attempt() -> ModelResponse:
        async with _watched(sink, str(ref)):
            return await provider.stream(ref, request, sink)

    try:
        return await with_retries(str(ref), attempt, lambda: sink.received)
    except ModelError as exc:
        # What arrived before the break counts: the prompt was read, the text was written.
        prompt = request.system_prompt + "".join(getattr(m, "text", "") or getattr(m, "content", "") for m in request.messages)
        exc.usage = Usage(estimate_tokens(prompt), estimate_tokens(text_so_far()), 1) if sink.received else Usage()
        raise
