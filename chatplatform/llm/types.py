"""What callers of the model layer see: plain dataclasses, no provider library types."""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


class ModelError(Exception):
    """The model provider failed: HTTP error, timeout, bad credentials, unknown model name...

    `status_code` is the provider's HTTP status when there was one. `retryable` says whether the
    same request may succeed if sent again (connection errors, 429, 5xx). A reply that broke off
    keeps what arrived: `partial_text` (every delta the caller was given) and `usage` (counted or
    estimated for what was received), so the caller can store what the user already saw.
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        partial_text: str = "",
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retryable = retryable
        self.retry_after = retry_after
        self.partial_text = partial_text
        self.usage = usage or Usage()

    def __str__(self) -> str:
        return self.message


_TOKEN = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """A rough token count, for what no provider counted (the offline model, a broken-off answer)."""
    return len(_TOKEN.findall(text))


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@dataclass(frozen=True)
class Attachment:
    """A file the user sent with a message: text goes to the model as text, images as image input."""

    name: str
    mime_type: str
    data: bytes

    @property
    def is_image(self) -> bool:
        return self.mime_type.startswith("image/")

    def as_text(self) -> str:
        """A text file as the model reads it: its content inside a `<file>` element naming it (a
        file of a kind the model cannot read is named, its content left out)."""
        if not self.data:
            return f'<file name="{self.name}" type="{self.mime_type}" note="not readable by the model"/>'
        text = self.data.decode("utf-8", errors="replace")
        return f'<file name="{self.name}" type="{self.mime_type}">\n{text}\n</file>'


@dataclass(frozen=True)
class HistoryMessage:
    """One earlier message of the conversation, oldest first in a history list."""

    role: Literal["user", "assistant"]
    text: str
    attachments: tuple[Attachment, ...] = ()


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
    # The approval a call with these arguments waits for before it runs (None: it runs at once):
    # {toolId, timeoutSeconds, approverRoles}. Without this function no call of the tool waits.
    approval: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens and model requests, summed over every request of a reply."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, self.requests + other.requests)


# --- One request to a provider: the conversation so far and what the model answered ---------------


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for; `arguments` is the JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class AssistantTurn:
    """What the model said in an earlier round trip of the loop: text, and the calls it asked for."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class ToolOutput:
    """The result of a call, as the model reads it (`error` marks a failure)."""

    call: ToolCall
    content: str
    error: bool = False


Message = HistoryMessage | AssistantTurn | ToolOutput


@dataclass(frozen=True)
class ModelRequest:
    """Everything a provider translates into one request."""

    model: str  # the model's name at the provider
    system_prompt: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()


@dataclass(frozen=True)
class ModelResponse:
    """One response: its text (already handed to the sink as it came), its calls and its usage."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage


# --- The events of a reply -------------------------------------------------------------------------


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


@dataclass(frozen=True)
class ReplyPaused:
    """The end of a reply that waits for people: the model asked for `calls`, of which `pending`
    need an approval before they run; none of them ran. `messages` is the conversation so far,
    ending with the model's calls: the reply goes on from it (`continue_reply`) once they are decided."""

    text: str
    usage: Usage
    model: str
    calls: tuple[ToolCall, ...]
    pending: tuple[tuple[ToolCall, dict[str, Any]], ...]  # each with its ToolSpec's approval
    messages: tuple[Message, ...]
    round_trips: int  # model requests made so far


ReplyEvent = TextDelta | ToolCallEvent | ToolResultEvent | ReplyDone | ReplyPaused


# --- A paused reply kept as JSON (the conversation of the loop so far) ---------------------------------


def messages_to_json(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """The loop's messages as JSON, to keep a paused reply in the database."""
    kept: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HistoryMessage):
            files = [{"name": a.name, "mimeType": a.mime_type, "data": base64.b64encode(a.data).decode()} for a in message.attachments]
            kept.append({"role": message.role, "text": message.text, "attachments": files})
        elif isinstance(message, AssistantTurn):
            calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
            kept.append({"role": "assistant-turn", "text": message.text, "calls": calls})
        else:
            call = {"id": message.call.id, "name": message.call.name, "arguments": message.call.arguments}
            kept.append({"role": "tool", "call": call, "content": message.content, "error": message.error})
    return kept


def messages_from_json(kept: list[dict[str, Any]]) -> list[Message]:
    messages: list[Message] = []
    for item in kept:
        if item["role"] == "assistant-turn":
            messages.append(AssistantTurn(item["text"], tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in item["calls"])))
        elif item["role"] == "tool":
            call = item["call"]
            messages.append(ToolOutput(ToolCall(call["id"], call["name"], call["arguments"]), item["content"], item["error"]))
        else:
            files = tuple(Attachment(f["name"], f["mimeType"], base64.b64decode(f["data"])) for f in item.get("attachments", ()))
            messages.append(HistoryMessage(item["role"], item["text"], files))
    return messages


@dataclass(frozen=True)
class Completion:
    """The answer of a one-shot side step."""

    text: str
    usage: Usage


# --- Cost ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """USD cost of a usage; prices are per 1,000 tokens."""

    input_cost: float
    output_cost: float
    total_cost: float


def cost(model: str, usage: Usage, prices: Mapping[str, Mapping[str, float]]) -> Cost:
    """The cost of `usage` with `prices` shaped like settings.CHAT_MODEL_PRICES.

    The model's own entry is used, else the `default` entry, else zero (docs/api.md, "Usage and cost").
    """
    entry = prices.get(model) or prices.get("default") or {}
    input_cost = usage.input_tokens * float(entry.get("input", 0.0)) / 1000
    output_cost = usage.output_tokens * float(entry.get("output", 0.0)) / 1000
    # Rounded so sums of float prices do not show artefacts like 0.30000000000000004 in the API.
    return Cost(round(input_cost, 10), round(output_cost, 10), round(input_cost + output_cost, 10))


@dataclass
class Sink:
    """Where a provider puts a streamed response as it arrives: `text` for the reply's text,
    `alive` for the other tokens (a tool call's name and arguments), so the loop's watchdog can
    tell a silent provider from a busy one. `received` is set by the first token of either kind;
    what carries none (a role, usage, a keep-alive) does not count."""

    on_text: Callable[[str], None]
    received: bool = False
    last_activity: float = 0.0
    clock: Callable[[], float] = field(default=lambda: 0.0)

    def text(self, chunk: str) -> None:
        self.alive()
        self.on_text(chunk)

    def alive(self) -> None:
        self.received = True
        self.last_activity = self.clock()
