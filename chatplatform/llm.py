"""The platform's model layer: the only module that imports the LLM library (pydantic-ai).

Callers see plain dataclasses: they name a model (`offline`, `openai:<model>`, `anthropic:<model>`,
`bedrock:<model>`, CONTRACT §7), pass a system prompt, the history, the user's message and the
tools, and get back an async stream of `ReplyEvent`s (`stream_reply`) or one `Completion`
(`complete`, for the side steps: directive selection, verification, titles). Every failure of the
provider surfaces as `ModelError`; a tool's failure never does (it is the tool's result).

Model objects are built on first use and cached per name, so their HTTP clients and pooled
connections are reused across turns. pydantic-ai itself replaces a cached client whose event loop
has gone (a new loop per test, `async_to_sync`), so the cache is safe across loops.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing, asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pydantic_ai
from pydantic_ai import (
    Agent,
    AgentRun,
    AgentRunError,
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelHTTPError,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    RunContext,
    TextPart,
    TextPartDelta,
    Tool,
    ToolFailed,
    UsageLimitExceeded,
    UsageLimits,
    UserError,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, RunUsage

from chatplatform.model_names import ModelRef, parse_model

if TYPE_CHECKING:
    from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
    from pydantic_ai.settings import ModelSettings

logger = logging.getLogger(__name__)

# pydantic-ai prints a welcome banner on the first run in an interactive terminal; a server never wants it.
pydantic_ai.BANNER_ENABLED = False

# Placeholder key for OpenAI-compatible servers that need none (vLLM, Ollama, llama.cpp): some refuse an empty one.
PLACEHOLDER_API_KEY = "not-set"
# The offline model echoes at most this much of the message: it answers demos and tests, not essays.
_OFFLINE_ECHO_LIMIT = 280


# --- Public types -------------------------------------------------------------------------------


class ModelError(Exception):
    """The model provider failed (HTTP error, timeout, bad credentials, unknown model name...).

    `status_code` is the provider's HTTP status when there was one.
    """

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class HistoryMessage:
    """One earlier message of the conversation, oldest first in a history list."""

    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model for one turn.

    `call` receives the model's arguments as a dict and returns a JSON-serializable result; an
    exception (or exceeding `timeout` seconds) becomes an error result the model sees.
    """

    name: str
    description: str
    parameters_json_schema: dict[str, Any]
    call: Callable[[dict[str, Any]], Awaitable[Any]]
    timeout: float | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens and model requests of one reply, summed over every request of the tool loop."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, self.requests + other.requests)


@dataclass(frozen=True)
class TextDelta:
    """Text of the reply, forwarded as soon as the provider sends it."""

    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    """The model asked for a tool; it is about to run."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool finished: `result` when it succeeded, `error` (the text the model sees) when not."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    result: Any
    error: str | None
    duration: float  # seconds spent in the tool's `call`; 0 when it never ran (e.g. invalid arguments)


@dataclass(frozen=True)
class ReplyDone:
    """The end of a reply: `text` is every TextDelta concatenated; `model` the canonical model name."""

    text: str
    usage: Usage
    model: str
    limit_reached: bool = False  # the tool loop hit `max_round_trips`; `text` ends with a note saying so


ReplyEvent = TextDelta | ToolCallEvent | ToolResultEvent | ReplyDone


@dataclass(frozen=True)
class Completion:
    """The answer of a one-shot side step."""

    text: str
    usage: Usage


@dataclass(frozen=True)
class Cost:
    """USD cost of a usage; prices are per 1,000 tokens."""

    input_cost: float
    output_cost: float
    total_cost: float


# --- Cost ---------------------------------------------------------------------------------------


def cost(model: str, usage: Usage, prices: Mapping[str, Mapping[str, float]]) -> Cost:
    """The cost of `usage` with `prices` shaped like settings.CHAT_MODEL_PRICES.

    The model's own entry is used, else the `default` entry, else zero (CONTRACT §2).
    """
    entry = prices.get(model) or prices.get("default") or {}
    input_cost = usage.input_tokens * float(entry.get("input", 0.0)) / 1000
    output_cost = usage.output_tokens * float(entry.get("output", 0.0)) / 1000
    # Rounded so sums of float prices do not show artefacts like 0.30000000000000004 in the API.
    return Cost(round(input_cost, 10), round(output_cost, 10), round(input_cost + output_cost, 10))


# --- Model objects ------------------------------------------------------------------------------

_models: dict[str, Model] = {}
_models_lock = threading.Lock()


def clear_model_cache() -> None:
    """Forget the cached model objects, e.g. after OPENAI_BASE_URL changed (tests do this)."""
    with _models_lock:
        _models.clear()


def preload(names: Iterable[str] = ()) -> None:
    """Build (and import the provider libraries of) these models now, not on the first turn.

    Importing a provider SDK takes up to a few seconds and would block the event loop of the first
    turn that needs it; call this at startup with the configured model names. No network is used.
    """
    for name in names:
        ref = _parse_or_raise(name)
        if ref.provider != "openai":  # chatplatform.openai_chat: nothing to build
            _model_for(ref)


def _parse_or_raise(name: str) -> ModelRef:
    try:
        return parse_model(name)
    except ValueError as exc:
        raise ModelError(f"model {exc}") from None


def _model_for(ref: ModelRef) -> Model:
    key = str(ref)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            try:
                model = _build_model(ref)
            except UserError as exc:  # missing API key, region...: a configuration error of the provider
                raise ModelError(f"{key}: {exc}") from exc
            _models[key] = model
        return model


def _build_model(ref: ModelRef) -> Model:
    # Provider SDKs are imported here, not at module level: anthropic alone costs seconds to import.
    if ref.provider == "offline":
        return _OfflineModel(_offline_reply, stream_function=_offline_stream, model_name="offline")
    if ref.provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(ref.model, provider=AnthropicProvider())
    if ref.provider == "bedrock":
        from pydantic_ai.models.bedrock import BedrockConverseModel
        from pydantic_ai.providers.bedrock import BedrockProvider

        return BedrockConverseModel(ref.model, provider=BedrockProvider())
    raise ModelError(f"model '{ref}': unknown provider")  # parse_model lets no other provider through


# --- The offline model (CONTRACT §7: built in, deterministic, no network) -------------------------

_TOKEN = re.compile(r"\w+|[^\w\s]")
_CHUNK = re.compile(r"\S+\s*|\s+")


def _estimate_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def _prompt_tokens(messages: list[ModelMessage]) -> int:
    """A rough token count of what a request sends: instructions, user text, earlier replies, tool results."""
    tokens = 0
    for message in messages:
        for part in message.parts:
            content = getattr(part, "content", None)
            if isinstance(content, str):
                tokens += _estimate_tokens(content)
    requests = [m for m in messages if isinstance(m, ModelRequest)]
    if requests and requests[-1].instructions:
        tokens += _estimate_tokens(requests[-1].instructions)
    return tokens


def _echo(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, UserPromptPart):
                    text = part.content if isinstance(part.content, str) else " ".join(c for c in part.content if isinstance(c, str))
                    text = " ".join(text.split())
                    if len(text) > _OFFLINE_ECHO_LIMIT:
                        text = text[: _OFFLINE_ECHO_LIMIT - 1] + "…"
                    return f"You said: {text}" if text else "You said nothing."
    return "You said nothing."


async def _offline_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    # async: FunctionModel runs a plain function in a worker thread, a hop this one does not need.
    text = _echo(messages)
    usage = RequestUsage(input_tokens=_prompt_tokens(messages), output_tokens=_estimate_tokens(text))
    return ModelResponse(parts=[TextPart(text)], usage=usage)


async def _offline_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    for chunk in _CHUNK.findall(_echo(messages)):
        yield chunk


class _OfflineModel(FunctionModel):
    """FunctionModel whose streamed responses count their prompt too.

    FunctionModel charges a streamed response a flat 50 input tokens whatever the prompt; the
    offline model's usage should grow with the conversation like a real model's does.
    """

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with super().request_stream(messages, model_settings, model_request_parameters, run_context) as stream:
            # Output tokens are added while the stream is consumed; only the input side is set here.
            stream._usage = dataclasses.replace(stream._usage, input_tokens=_prompt_tokens(messages))
            yield stream


# --- Turns --------------------------------------------------------------------------------------


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class ReplyBuilder:
    """The text side of one reply, whoever streams it: each delta handed to `on_text`, the
    paragraph break between the text parts of successive model responses, the tool-loop limit
    note and the final ReplyDone."""

    def __init__(self, on_text: Callable[[str], None]) -> None:
        self.on_text = on_text
        self.texts: list[str] = []
        self.part: list[str] = []  # the current part's text as the model sent it
        self._separate_next = False
        self._limit_reached = False

    def new_part(self) -> None:
        """A new text part starts (a new model response): its text starts on a new paragraph."""
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

    def done(self, usage: Usage, model: str) -> ReplyDone:
        return ReplyDone(text="".join(self.texts), usage=usage, model=model, limit_reached=self._limit_reached)


async def run_tool(spec: ToolSpec, arguments: dict[str, Any]) -> tuple[Any, str | None, float]:
    """Call a tool: (result, None, seconds) or (None, the error text the model reads, seconds).

    Never raises: a tool's failure or timeout is its result (CONTRACT §7), the turn goes on.
    """
    started = time.perf_counter()
    try:
        async with asyncio.timeout(spec.timeout):
            return await spec.call(arguments), None, time.perf_counter() - started
    except TimeoutError as exc:
        error = f"the tool did not answer within {spec.timeout:g} s" if spec.timeout else describe(exc)
    except Exception as exc:
        logger.info("tool %s failed: %s", spec.name, describe(exc))
        error = describe(exc)
    return None, error, time.perf_counter() - started


def _history(history: Iterable[HistoryMessage]) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(m.text)]) if m.role == "user" else ModelResponse(parts=[TextPart(m.text)]) for m in history]


def _tool(spec: ToolSpec, durations: dict[str, float]) -> Tool[Any]:
    async def run(ctx: RunContext[Any], /, **arguments: Any) -> Any:
        # Positional-only ctx: a tool parameter may itself be named "ctx".
        result, error, duration = await run_tool(spec, arguments)
        if ctx.tool_call_id is not None:
            durations[ctx.tool_call_id] = duration
        if error is not None:
            raise ToolFailed(error)  # the run goes on: the model reads the error as the tool's result
        return result

    # pydantic-ai edits the schema it is given (e.g. adds additionalProperties): give it a copy.
    return Tool.from_schema(
        run,
        name=spec.name,
        description=spec.description,
        json_schema=copy.deepcopy(spec.parameters_json_schema),
        takes_ctx=True,
    )


def _usage(run_usage: RunUsage) -> Usage:
    return Usage(input_tokens=run_usage.input_tokens, output_tokens=run_usage.output_tokens, requests=run_usage.requests)


def _model_error(exc: Exception, model: str) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, AgentRunError | UserError):
        return ModelError(f"{model}: {exc}", status_code=exc.status_code if isinstance(exc, ModelHTTPError) else None)
    # Not every SDK failure is mapped by pydantic-ai (e.g. botocore's NoCredentialsError): still the provider's.
    logger.warning("%s failed with an unmapped error", model, exc_info=exc)
    return ModelError(f"{model}: {describe(exc)}")


def _agent(model: Model, system_prompt: str, tools: list[Tool[Any]] | None = None) -> Agent[None, str]:
    # A fresh Agent per call costs ~0.15 ms; the model (and its HTTP client) is the shared, cached part.
    try:
        return Agent(model, instructions=system_prompt or None, tools=tools or (), name="chatplatform")
    except UserError as exc:  # e.g. two tools with one name
        raise ModelError(str(exc)) from exc


async def _stream_events(run: AgentRun[None, str]) -> AsyncIterator[AgentStreamEvent]:
    """Every event of a run, driven node by node in the caller's task.

    Cheaper than run_stream_events(), which runs the agent in a task of its own and hands each
    event over through a memory stream: measured ~20% less CPU per streamed turn.
    """
    async for node in run:
        if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
            async with node.stream(run.ctx) as events:
                async for event in events:
                    yield event


async def _agent_reply(
    ref: ModelRef,
    system_prompt: str,
    history: list[HistoryMessage],
    message: str,
    tools: list[ToolSpec],
    max_round_trips: int,
    on_text: Callable[[str], None],
) -> AsyncIterator[ReplyEvent]:
    """stream_reply through a pydantic-ai agent: every provider but `openai:`."""
    durations: dict[str, float] = {}
    agent = _agent(_model_for(ref), system_prompt, [_tool(spec, durations) for spec in tools])
    reply = ReplyBuilder(on_text)
    calls: dict[str, ToolCallEvent] = {}
    limit_reached = False
    async with agent.iter(message, message_history=_history(history), usage_limits=UsageLimits(request_limit=max_round_trips)) as run:
        try:
            async for event in _stream_events(run):
                out: ReplyEvent | None = None
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    reply.new_part()
                    reply.text(event.part.content)
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    reply.text(event.delta.content_delta)
                elif isinstance(event, FunctionToolCallEvent):
                    call = ToolCallEvent(event.part.tool_call_id, event.part.tool_name, event.part.args_as_dict())
                    calls[call.call_id] = out = call
                elif isinstance(event, FunctionToolResultEvent):
                    part = event.part
                    call = calls.get(part.tool_call_id) or ToolCallEvent(part.tool_call_id, part.tool_name, {})
                    ok = part.outcome == "success"
                    out = ToolResultEvent(
                        call_id=call.call_id,
                        name=call.name,
                        arguments=call.arguments,
                        result=part.content if ok else None,
                        error=None if ok else part.model_response_str(wrap_if_error=False),
                        duration=durations.pop(part.tool_call_id, 0.0),
                    )
                if out is not None:
                    yield out
        except UsageLimitExceeded:
            # Raised before the request after the max_round_trips-th; the last response's tool calls did run.
            limit_reached = True
        usage = _usage(run.usage)
    if limit_reached:
        reply.limit(max_round_trips)
    yield reply.done(usage, str(ref))


async def _text_as_events(provider: Callable[[Callable[[str], None]], AsyncIterator[ReplyEvent]]) -> AsyncIterator[ReplyEvent]:
    """A provider's events with its text among them as TextDelta events, in order: for callers
    that iterate everything rather than take the text through a callback."""
    pending: asyncio.Queue[ReplyEvent | Exception | None] = asyncio.Queue()

    async def run() -> None:
        try:
            async with aclosing(provider(lambda text: pending.put_nowait(TextDelta(text)))) as events:
                async for event in events:
                    pending.put_nowait(event)
        except Exception as exc:
            pending.put_nowait(exc)
        else:
            pending.put_nowait(None)

    producer = asyncio.create_task(run())
    try:
        while (item := await pending.get()) is not None:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        if not producer.done():  # left early: the request is cancelled
            producer.cancel()
            with suppress(asyncio.CancelledError):
                await producer


async def stream_reply(
    *,
    model: str,
    system_prompt: str,
    history: list[HistoryMessage],
    message: str,
    tools: list[ToolSpec] | None = None,
    max_round_trips: int = 10,
    on_text: Callable[[str], None] | None = None,
) -> AsyncIterator[ReplyEvent]:
    """Stream the model's reply to `message`: TextDelta / ToolCallEvent / ToolResultEvent, then ReplyDone.

    Text is forwarded as the provider sends it: yielded as TextDelta events or, given `on_text`,
    handed to it instead (for `openai:` models straight from the connection's callback, without
    waking the caller's task per delta: a turn's per-token cost). `system_prompt` is sent as the
    system message of every request. Tool calls of one model response run concurrently; a tool's
    failure is its result, which the model reads. After `max_round_trips` model requests the loop
    stops and the reply ends with a note saying so, instead of failing. Raises ModelError when the
    provider fails. Close the generator (`contextlib.aclosing`) when leaving early: that cancels the request.
    """
    if max_round_trips < 1:
        raise ValueError("max_round_trips must be at least 1")
    if roles := {item.role for item in history} - {"user", "assistant"}:
        raise ValueError(f"history role must be 'user' or 'assistant', not {sorted(roles)[0]!r}")
    ref = _parse_or_raise(model)

    def provider(text_to: Callable[[str], None]) -> AsyncIterator[ReplyEvent]:
        if ref.provider == "openai":
            from chatplatform import openai_chat

            return openai_chat.stream_reply(
                model=str(ref),
                name=ref.model,
                system_prompt=system_prompt,
                history=history,
                message=message,
                tools=tools or [],
                max_round_trips=max_round_trips,
                on_text=text_to,
            )
        return _agent_reply(ref, system_prompt, history, message, tools or [], max_round_trips, text_to)

    events = provider(on_text) if on_text is not None else _text_as_events(provider)
    async with aclosing(events):
        try:
            async for event in events:
                yield event
        except Exception as exc:  # tools never raise (run_tool): what is left is the provider's or pydantic-ai's
            raise _model_error(exc, str(ref)) from exc


async def complete(*, model: str, system_prompt: str, prompt: str, timeout: float | None = None) -> Completion:
    """One request without tools or streaming, for side steps; ModelError on failure or after `timeout` seconds."""
    ref = _parse_or_raise(model)
    try:
        async with asyncio.timeout(timeout):
            if ref.provider == "openai":
                from chatplatform import openai_chat

                return await openai_chat.complete(model=str(ref), name=ref.model, system_prompt=system_prompt, prompt=prompt)
            result = await _agent(_model_for(ref), system_prompt).run(prompt)
    except TimeoutError as exc:
        raise ModelError(f"{ref}: no answer within {timeout:g} s") from exc
    except Exception as exc:
        raise _model_error(exc, str(ref)) from exc
    return Completion(text=result.output, usage=_usage(result.usage))
