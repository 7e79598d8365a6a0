"""Executors of tool calls, one module per execution type (docs/api.md, "Tools").

`inline` runs JavaScript in quickjs, `mcp` calls a tool on an MCP server over Streamable HTTP,
`function` calls a `local:` registry function or an AWS Lambda function. Each takes plain
arguments (never a model instance) and returns the JSON-serialisable result of the call, or
raises `ToolError` with the text the model should read. tools.toolset validates arguments,
bounds every call by the tool's `executionTimeout`, checks the size of the result and records
the trace; the executors also respect the timeout themselves so no work outlives it for long.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Literal, TypeVar

Outcome = Literal["ok", "error", "timeout"]
T = TypeVar("T")


class ToolError(Exception):
    """A call that did not produce a result; `str()` is the message the model reads.

    chatplatform.llm gives the model `ToolError: <message>` as the tool's result (docs/api.md, "Tools in a turn":
    a tool's failure never fails the turn).
    """

    def __init__(self, message: str, *, outcome: Outcome = "error") -> None:
        super().__init__(message)
        self.message = message
        self.outcome: Outcome = outcome

    def __str__(self) -> str:
        return self.message


def timed_out(seconds: float) -> ToolError:
    """The one wording of a timeout, whichever layer noticed it first."""
    return ToolError(f"the tool did not answer within {seconds:g} s (its executionTimeout)", outcome="timeout")


def loop_local(store: dict[asyncio.AbstractEventLoop, T], factory: Callable[[], T]) -> T:
    """The running loop's entry of `store`, made by `factory` on first use.

    HTTP clients and asyncio locks belong to one event loop. A server process has one loop, but
    tests and `async_to_sync` make many: entries of loops closed since are dropped as new ones come.
    """
    loop = asyncio.get_running_loop()
    value = store.get(loop)
    if value is None:
        for closed in [other for other in store if other.is_closed()]:
            del store[closed]
        value = store[loop] = factory()
    return value
