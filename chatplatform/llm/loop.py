"""The one tool loop, for every provider.

A reply is a loop of model requests: each response's text is handed on as it streams, the calls
it asks for run concurrently, their results go back to the model, until a response asks for no
call or `max_round_trips` requests were made. Providers (`chatplatform.llm.providers`) only
translate a `ModelRequest` into their API and stream its answer into a `Sink`; each request is
watched and retried by `chatplatform.llm.attempts`. A failure carries what arrived before it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from contextlib import aclosing, suppress
from typing import Any

from django.conf import settings

from chatplatform import metrics
from chatplatform.llm.attempts import respond, with_retries
from chatplatform.llm.providers import for_ref
from chatplatform.llm.types import (
    AssistantTurn,
    Attachment,
    Completion,
    HistoryMessage,
    ModelError,
    ModelRequest,
    ReplyDone,
    ReplyEvent,
    ReplyPaused,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolOutput,
    ToolResultEvent,
    ToolSpec,
    Usage,
    describe,
)
from chatplatform.model_names import ModelRef, parse_model

logger = logging.getLogger(__name__)


def parse_or_raise(name: str) -> ModelRef:
    try:
        return parse_model(name)
    except ValueError as exc:
        raise ModelError(f"model {exc}") from None


class ReplyBuilder:
    """The text side of one reply: each delta handed to `on_text`, the paragraph break between the
    text of successive model responses, the tool-loop limit note and the final ReplyDone."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.texts: list[str] = []
        self.part: list[str] = []  # the current response's text as the model sent it
        self._separate_next = False
        self._limit_reached = False

    def new_part(self) -> None:
        """A new model response starts: its text starts on a new paragraph."""
        self._separate_next = bool(self.texts)
        self.part = []

    def text(self, chunk: str) -> None:
        if not chunk:
            return
        self.part.append(chunk)
        if self._separate_next:
            self._separate_next = False
            if self.texts and not self.texts[-1].endswith("\n"):
                chunk = "\n\n" + chunk
        self.texts.append(chunk)
        self.on_text(chunk)

    def limit(self, max_round_trips: int) -> None:
        """The note ending a reply whose tool loop hit `max_round_trips`."""
        self._limit_reached = True
        self.new_part()
        self.text(f"(I stopped here: answering needed more than {max_round_trips} model round trips, the tool loop limit.)")

    @property
    def so_far(self) -> str:
        return "".join(self.texts)

    def done(self, usage: Usage, model: str) -> ReplyDone:
        return ReplyDone(text=self.so_far, usage=usage, model=model, limit_reached=self._limit_reached)


# --- Tool calls -------------------------------------------------------------------------------------


async def run_tool(spec: ToolSpec, arguments: dict[str, Any]) -> tuple[Any, str | None, float]:
    """Call a tool: (result, None, seconds) or (None, the error text the model reads, seconds).

    Never raises: a tool's failure or timeout is its result (docs/api.md, "Tools in a turn"), the turn goes on.
    """
    started = time.perf_counter()
    try:
        async with asyncio.timeout(spec.timeout):
            result = await spec.call(arguments)
        metrics.tool_called(True, time.perf_counter() - started)
        return result, None, time.perf_counter() - started
    except TimeoutError as exc:
        error = f"the tool did not answer within {spec.timeout:g} s" if spec.timeout else describe(exc)
    except Exception as exc:
        logger.info("tool %s failed: %s", spec.name, describe(exc))
        error = describe(exc)
    metrics.tool_called(False, time.perf_counter() - started)
    return None, error, time.perf_counter() - started


def _arguments(text: str) -> dict[str, Any] | None:
    try:
        arguments = json.loads(text or "{}")
    except ValueError:
        return None
    return arguments if isinstance(arguments, dict) else None


async def _call(call: ToolCall, tools: dict[str, ToolSpec]) -> ToolResultEvent:
    arguments = _arguments(call.arguments)
    spec = tools.get(call.name)
    if spec is None:
        unknown = f"unknown tool {call.name!r}; the tools are: {', '.join(sorted(tools)) or 'none'}"
        return ToolResultEvent(call.id, call.name, arguments or {}, None, unknown, 0.0)
    if arguments is None:
        return ToolResultEvent(call.id, call.name, {}, None, f"invalid arguments for {call.name}: not a JSON object", 0.0)
    result, error, duration = await run_tool(spec, arguments)
    return ToolResultEvent(call.id, call.name, arguments, result, error, duration)


def _output(call: ToolCall, result: ToolResultEvent) -> ToolOutput:
    if result.error is not None:
        return ToolOutput(call, result.error, error=True)
    content = result.result if isinstance(result.result, str) else json.dumps(result.result, separators=(",", ":"), default=str)
    return ToolOutput(call, content)


# --- The reply ----------------------------------------------------------------------------------------


async def _reply(
    ref: ModelRef,
    system_prompt: str,
    messages: list[HistoryMessage | AssistantTurn | ToolOutput],
    tools: Sequence[ToolSpec],
    max_round_trips: int,
    on_text: Callable[[str], None],
    *,
    round_trips: int = 0,
    decided: dict[str, tuple[bool, str]] | None = None,
    text_so_far: str = "",
) -> AsyncGenerator[ReplyEvent, None]:
    """The loop. Given `decided` (call id → (approved, reason)), the conversation ends with the
    model's calls of a paused reply: they run (or are refused) first, then the loop goes on, its
    text after `text_so_far` (the reply's text before the pause)."""
    reply = ReplyBuilder(on_text)
    if text_so_far:
        reply.texts.append(text_so_far)
    by_name = {spec.name: spec for spec in tools}
    usage = Usage()
    if decided is not None:
        last = messages[-1]
        assert isinstance(last, AssistantTurn)
        async for event in _run_calls(last.tool_calls, by_name, messages, decided):
            yield event
    for round_trip in range(round_trips + 1, max_round_trips + 1):
        reply.new_part()
        try:
            request = ModelRequest(ref.model, system_prompt, tuple(messages), tuple(tools))
            response = await respond(ref, request, reply.text, lambda: "".join(reply.part))
        except ModelError as exc:
            exc.partial_text, exc.usage = reply.so_far, usage + exc.usage
            raise
        usage += response.usage
        if not response.tool_calls:
            break
        for call in response.tool_calls:
            yield ToolCallEvent(call.id, call.name, _arguments(call.arguments) or {})
        pending = tuple((call, approval) for call in response.tool_calls if (approval := _approval(call, by_name)) is not None)
        messages.append(AssistantTurn("".join(reply.part), response.tool_calls))
        if pending:
            yield ReplyPaused(reply.so_far, usage, str(ref), response.tool_calls, pending, tuple(messages), round_trip)
            return
        async for event in _run_calls(response.tool_calls, by_name, messages, {}):
            yield event
        if round_trip == max_round_trips:
            reply.limit(max_round_trips)
    yield reply.done(usage, str(ref))


def _approval(call: ToolCall, tools: dict[str, ToolSpec]) -> dict[str, Any] | None:
    """The approval this call waits for; None when it runs at once."""
    spec = tools.get(call.name)
    arguments = _arguments(call.arguments)
    if spec is None or spec.approval is None or arguments is None:
        return None
    return spec.approval(arguments)


async def _run_calls(
    calls: Sequence[ToolCall], tools: dict[str, ToolSpec], messages: list[Any], decided: dict[str, tuple[bool, str]]
) -> AsyncIterator[ReplyEvent]:
    """Run the calls concurrently (a refused one is not run: the refusal is its result), their results appended to `messages`."""

    async def one(call: ToolCall) -> ToolResultEvent:
        approved, reason = decided.get(call.id, (True, ""))
        if not approved:
            refusal = f"not run: a person refused this call ({reason})" if reason else "not run: a person refused this call"
            return ToolResultEvent(call.id, call.name, _arguments(call.arguments) or {}, None, refusal, 0.0)
        return await _call(call, tools)

    results = await asyncio.gather(*(one(call) for call in calls))
    for result in results:
        yield result
    messages += [_output(call, result) for call, result in zip(calls, results, strict=True)]


async def continue_reply(
    *,
    model: str,
    system_prompt: str,
    messages: list[HistoryMessage | AssistantTurn | ToolOutput],
    decided: dict[str, tuple[bool, str]],
    round_trips: int,
    tools: list[ToolSpec] | None = None,
    max_round_trips: int = 10,
    on_text: Callable[[str], None],
    text_so_far: str = "",
) -> AsyncIterator[ReplyEvent]:
    """The rest of a paused reply (ReplyPaused), once its calls are decided: `decided` maps each
    call id to (approved, reason); calls it does not name run. Events as `stream_reply`'s; the
    final text (ReplyDone, or ReplyPaused again) includes `text_so_far`."""
    ref = parse_or_raise(model)
    events = _reply(
        ref,
        system_prompt,
        messages,
        tools or [],
        max_round_trips,
        on_text,
        round_trips=round_trips,
        decided=decided,
        text_so_far=text_so_far,
    )
    async with aclosing(events):
        try:
            async for event in events:
                yield event
        except ModelError:
            raise
        except Exception as exc:
            logger.warning("%s failed with an unmapped error", ref, exc_info=exc)
            raise ModelError(f"{ref}: {describe(exc)}") from exc


async def stream_reply(
    *,
    model: str,
    system_prompt: str,
    history: list[HistoryMessage],
    message: str,
    attachments: Sequence[Attachment] = (),
    tools: list[ToolSpec] | None = None,
    max_round_trips: int = 10,
    on_text: Callable[[str], None] | None = None,
) -> AsyncIterator[ReplyEvent]:
    """Stream the model's reply to `message`: ToolCallEvent / ToolResultEvent, then ReplyDone.

    Text goes to `on_text` as the provider sends it (without it, it is yielded as TextDelta
    events among the others). `system_prompt` is sent with every request. Raises ModelError when
    the provider fails; its `partial_text` and `usage` hold what arrived before. Close the
    generator (`contextlib.aclosing`) when leaving early: that cancels the request.
    """
    if max_round_trips < 1:
        raise ValueError("max_round_trips must be at least 1")
    if roles := {item.role for item in history} - {"user", "assistant"}:
        raise ValueError(f"history role must be 'user' or 'assistant', not {sorted(roles)[0]!r}")
    ref = parse_or_raise(model)
    messages: list[HistoryMessage | AssistantTurn | ToolOutput] = [*history, HistoryMessage("user", message, tuple(attachments))]

    def reply(text_to: Callable[[str], None]) -> AsyncGenerator[ReplyEvent, None]:
        return _reply(ref, system_prompt, messages, tools or [], max_round_trips, text_to)

    events = reply(on_text) if on_text is not None else _text_as_events(reply)
    async with aclosing(events):
        try:
            async for event in events:
                yield event
        except ModelError:
            raise
        except Exception as exc:  # tools never raise (run_tool): what is left is the provider library's
            logger.warning("%s failed with an unmapped error", ref, exc_info=exc)
            raise ModelError(f"{ref}: {describe(exc)}") from exc


async def _text_as_events(
    reply: Callable[[Callable[[str], None]], AsyncGenerator[ReplyEvent, None]],
) -> AsyncGenerator[ReplyEvent, None]:
    """The reply's text among its events as TextDelta events, in order, for callers that iterate
    everything rather than take the text through a callback."""
    pending: asyncio.Queue[ReplyEvent | BaseException | None] = asyncio.Queue()

    async def run() -> None:
        try:
            async with aclosing(reply(lambda text: pending.put_nowait(TextDelta(text)))) as events:
                async for event in events:
                    pending.put_nowait(event)
        except Exception as exc:
            pending.put_nowait(exc)
        else:
            pending.put_nowait(None)

    producer = asyncio.create_task(run())
    try:
        while (item := await pending.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        if not producer.done():  # left early: the request is cancelled
            producer.cancel()
            with suppress(asyncio.CancelledError):
                await producer


async def complete(*, model: str, system_prompt: str, prompt: str, timeout: float | None = None) -> Completion:
    """One request without tools or streaming, for side steps; ModelError on failure or after
    `timeout` seconds (at most the first-token timeout)."""
    ref = parse_or_raise(model)
    provider = for_ref(ref)
    request = ModelRequest(ref.model, system_prompt, (HistoryMessage("user", prompt),))
    limit = min(timeout or settings.CHAT_MODEL_FIRST_TOKEN_TIMEOUT, settings.CHAT_MODEL_FIRST_TOKEN_TIMEOUT)
    try:
        async with asyncio.timeout(limit):
            return await with_retries(str(ref), lambda: provider.complete(ref, request), lambda: False)
    except TimeoutError as exc:
        raise ModelError(f"{ref}: no answer within {limit:g} s") from exc
    except ModelError:
        raise
    except Exception as exc:
        logger.warning("%s failed with an unmapped error", ref, exc_info=exc)
        raise ModelError(f"{ref}: {describe(exc)}") from exc
