"""The platform's model layer. Callers see plain dataclasses and two functions:

    stream_reply(model=, system_prompt=, history=, message=, tools=, on_text=)  a streamed reply with the tool loop
    continue_reply(model=, system_prompt=, messages=, decided=, ...)            the rest of a reply paused for approvals
    complete(model=, system_prompt=, prompt=, timeout=)                         one request, for side steps

A model is named `offline`, `openai:<model>`, `anthropic:<model>` or `bedrock:<model>` (docs/api.md, "Models").
Every failure of a provider surfaces as `ModelError`; a tool's failure never does (it is the
tool's result, which the model reads).

    loop.py        the one tool loop: round trips, concurrent tool calls, timeouts, retries
    providers/     one module per provider, translating a request and streaming its answer
    http.py        the aiohttp session outbound model calls share (proxies, certificates)
    types.py       what callers see
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from chatplatform.llm.loop import CALL_ID, ReplyBuilder, complete, continue_reply, parse_or_raise, run_tool, stream_reply
from chatplatform.llm.types import (
    Attachment,
    Completion,
    Cost,
    HistoryMessage,
    ModelError,
    ReplyDone,
    ReplyEvent,
    ReplyPaused,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    ToolSpec,
    Usage,
    cost,
    describe,
    estimate_tokens,
    messages_from_json,
    messages_to_json,
)
from chatplatform.model_names import ModelRef

__all__ = [
    "CALL_ID",
    "Attachment",
    "Completion",
    "Cost",
    "HistoryMessage",
    "ModelError",
    "ModelRef",
    "ReplyBuilder",
    "ReplyDone",
    "ReplyEvent",
    "ReplyPaused",
    "TextDelta",
    "ToolCallEvent",
    "ToolResultEvent",
    "ToolSpec",
    "Usage",
    "clear_model_cache",
    "complete",
    "continue_reply",
    "cost",
    "describe",
    "estimate_tokens",
    "messages_from_json",
    "messages_to_json",
    "preload",
    "run_tool",
    "stream_reply",
]


def clear_model_cache() -> None:
    """Forget the SDK model objects, e.g. after a provider's variables changed (tests do this)."""
    sdk = sys.modules.get("chatplatform.llm.providers.sdk")  # not imported: nothing cached
    if sdk is not None:
        sdk.clear()


def preload(names: Iterable[str] = ()) -> None:
    """Import the provider libraries of these models now, and build their SDK clients, rather than
    on the first turn that needs them (an SDK import takes seconds and would block its event loop)."""
    from chatplatform.llm import providers

    for name in names:
        ref = parse_or_raise(name)
        module = providers.for_ref(ref)
        if ref.provider in ("anthropic", "bedrock"):
            module.model_for(ref)
