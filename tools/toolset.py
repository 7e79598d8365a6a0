"""The tools a turn offers the model (docs/api.md, "Tools in a turn"), as chatplatform.llm ToolSpecs.

For each tool id of the agent, after rollout `toolOverrides` swapped it: a tool that is missing,
`retired`, or denied to this user by its own `accessRules` is not offered; otherwise every
function of its `functionSchema` becomes one ToolSpec named after the function, its
ParameterDefinitions translated to JSON Schema (tools.arguments). A call

1. checks the model's arguments against that schema before anything runs (a mismatch is an error
   result naming the argument and the rule; `null` for an optional parameter counts as absent),
2. runs the executor of the tool's `executionType` with the event of docs/api.md "Tools in a turn", bounded by the
   tool's `executionTimeout`,
3. refuses a result whose JSON is over CHAT_TOOL_RESULT_MAX_BYTES,
4. records a ToolTrace (arguments and result truncated to CHAT_TOOL_TRACE_MAX_CHARS).

A failure, a timeout or an oversized result is raised as tools.executors.ToolError, which
chatplatform.llm gives the model as the tool's result: it never fails the turn.

This module takes plain arguments (the user's wire fields, the event fields) and imports nothing
from chat or agents (STYLE.md: tools is a leaf).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from chatplatform import llm
from chatplatform.access import AccessRules, approval_required
from tools.arguments import check_arguments, parameters_json_schema, truncated_text
from tools.executors import Outcome, ToolError, timed_out
from tools.models import ExecutionType, LifecycleStatus, ToolDefinition
from tools.selectors import tools_by_ids

logger = logging.getLogger(__name__)

EVENT_FIELDS = ("userId", "sessionId", "chatAppId", "agentId", "customData", "timezone")
# chatplatform.llm's own timeout is a backstop only: the toolset's fires first and is traced.
_BACKSTOP_SECONDS = 5.0
# The toolset's bound waits a little longer than the executors' own, which report more precisely.
_SHARED_BOUND_GRACE_SECONDS = 0.75


# --- traces -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolTrace:
    """One tool call as the message's traces record it.

    `arguments` and `result` are the values themselves when their JSON fits in
    CHAT_TOOL_TRACE_MAX_CHARS, else the truncated JSON text ending with the full length.
    """

    tool_id: str
    function: str
    arguments: Any
    duration_ms: float
    outcome: Outcome
    result: Any = None
    error: str | None = None

    def as_wire(self) -> dict[str, Any]:
        """The trace in the API's camelCase shape."""
        wire: dict[str, Any] = {
            "stage": "tool",  # beside the turn's other traces (model, selection, verification)
            "toolId": self.tool_id,
            "function": self.function,
            "arguments": self.arguments,
            "durationMs": self.duration_ms,
            "outcome": self.outcome,
        }
        if self.outcome == "ok":
            wire["result"] = self.result
        else:
            wire["error"] = self.error
        return wire


def _truncated(value: Any, limit: int) -> Any:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= limit:
        return value
    return f"{text[:limit]}… ({len(text)} characters)"


@dataclass
class Toolset:
    """The ToolSpecs of a turn and the traces of the calls made so far (in the order they ended).

    `tool_ids` maps each offered function name to its tool id; `skipped` says why a tool id of
    the agent is not offered (missing, retired, denied, a duplicate function name).
    """

    specs: list[llm.ToolSpec] = field(default_factory=list)
    traces: list[ToolTrace] = field(default_factory=list)
    tool_ids: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


# --- calls --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Runnable:
    """What a call needs of the tool, copied out of the model instance (no database access later)."""

    tool_id: str
    execution_type: str
    timeout: float
    code: str
    url: str
    auth: dict[str, Any] | None
    function_arn: str

    @classmethod
    def of(cls, tool: ToolDefinition) -> _Runnable:
        auth = None
        if isinstance(tool.auth, Mapping):
            # Only the credentials: a stored auth.token (a cache field of the definition) is not used.
            auth = {key: tool.auth.get(key) for key in ("clientId", "clientSecret", "tokenUrl")}
        return cls(
            tool_id=tool.tool_id,
            execution_type=tool.execution_type,
            timeout=float(tool.execution_timeout or 30),
            code=tool.code,
            url=tool.url,
            auth=auth,
            function_arn=tool.function_arn,
        )

    async def run(self, event: dict[str, Any]) -> Any:
        # Each executor (QuickJS, the MCP client, boto3) is imported by the first call of its type:
        # a process that never runs one never loads it, and Django starts without them.
        if self.execution_type == ExecutionType.INLINE:
            from tools.executors.inline import run_inline

            return await run_inline(self.code, event, timeout=self.timeout)
        if self.execution_type == ExecutionType.MCP:
            from tools.executors.mcp import call_mcp_tool

            return await call_mcp_tool(url=self.url, event=event, timeout=self.timeout, auth=self.auth)
        if self.execution_type == ExecutionType.FUNCTION:
            from tools.executors.function import call_function

            return await call_function(self.function_arn, event, timeout=self.timeout)
        raise ToolError(f"tool {self.tool_id} has an unknown executionType {self.execution_type!r}")


# A widget tag in text: `<scope.tag ...>`, `</scope.tag>` or `<scope.tag .../>` (docs/api.md, "The system prompt").
_TAG = re.compile(r"</?([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)(?:\s[^<>]*)?/?>")


def strip_disallowed_tags(value: Any, allowed: frozenset[str]) -> Any:
    """`value` with the markup of every widget tag not in `allowed` removed from its strings (the
    text between the markup stays). A tag a tool may emit passes through unchanged."""
    if isinstance(value, str):
        return _TAG.sub(lambda match: match.group(0) if match.group(1) in allowed else "", value)
    if isinstance(value, list):
        return [strip_disallowed_tags(item, allowed) for item in value]
    if isinstance(value, dict):
        return {key: strip_disallowed_tags(item, allowed) for key, item in value.items()}
    return value


def _check_size(result: Any) -> None:
    try:
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ToolError(f"the result cannot be converted to JSON ({exc})") from None
    size = len(text.encode())
    if size > settings.CHAT_TOOL_RESULT_MAX_BYTES:
        raise ToolError(f"the result is {size} bytes of JSON, over the limit of {settings.CHAT_TOOL_RESULT_MAX_BYTES} bytes")


def _approval_of(tool: ToolDefinition, user: Mapping[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any] | None] | None:
    """The approval a call of `tool` waits for, given its arguments (None when it runs at once)."""
    rule = tool.approval
    if not rule:
        return None
    waits = {"toolId": tool.tool_id, "timeoutSeconds": rule.get("timeoutSeconds", 86400), "approverRoles": rule.get("approverRoles") or []}
    return lambda arguments: waits if approval_required(rule, user=user, arguments=arguments, tool_id=tool.tool_id) else None


def _spec(
    runnable: _Runnable,
    function: Mapping[str, Any],
    base: dict[str, Any],
    record: Callable[[ToolTrace], None],
    allowed_tags: frozenset[str],
    needs_approval: Callable[[dict[str, Any]], dict[str, Any] | None] | None,
    can_wait: bool,
) -> llm.ToolSpec:
    name = str(function["name"])
    schema = parameters_json_schema(function)
    limit = settings.CHAT_TOOL_TRACE_MAX_CHARS

    async def run(arguments: Any) -> Any:
        params = check_arguments(name, schema, arguments)
        event = {"toolId": runnable.tool_id, "function": name, "parameters": params, **base}
        try:
            # The executors bound themselves too; this is the one bound every type shares.
            async with asyncio.timeout(runnable.timeout + _SHARED_BOUND_GRACE_SECONDS):
                result = await runnable.run(event)
        except TimeoutError:
            raise timed_out(runnable.timeout) from None
        except ToolError:
            raise
        except Exception as exc:  # an executor's bug: still only this tool's failure
            logger.exception("tool %s (%s) failed unexpectedly", runnable.tool_id, name)
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc
        _check_size(result)
        return strip_disallowed_tags(result, allowed_tags)

    async def call(arguments: dict[str, Any]) -> Any:
        started = time.perf_counter()

        def trace(outcome: Outcome, *, result: Any = None, error: str | None = None) -> None:
            duration_ms = round((time.perf_counter() - started) * 1000, 3)
            record(
                ToolTrace(
                    tool_id=runnable.tool_id,
                    function=name,
                    arguments=_truncated(arguments, limit),
                    duration_ms=duration_ms,
                    outcome=outcome,
                    result=_truncated(result, limit) if outcome == "ok" else None,
                    error=truncated_text(error, limit) if error is not None else None,
                )
            )

        try:
            if needs_approval is not None and not can_wait and needs_approval(arguments) is not None:
                raise ToolError("needs a person's approval, which this turn cannot wait for (a collaborator's own tools run unattended)")
            result = await run(arguments)
        except ToolError as exc:
            exc.message = truncated_text(exc.message, limit)
            trace(exc.outcome, error=exc.message)
            raise
        except asyncio.CancelledError:
            trace("error", error="cancelled: the turn ended before the tool answered")
            raise
        trace("ok", result=result)
        return result

    description = text if isinstance(text := function.get("description"), str) else ""
    return llm.ToolSpec(
        name=name,
        description=description,
        parameters_json_schema=schema,
        call=call,
        timeout=runnable.timeout + _BACKSTOP_SECONDS,
        approval=needs_approval if can_wait else None,
    )


# --- the toolset of a turn ----------------------------------------------------------------------


def resolved_tool_ids(agent_tool_ids: Iterable[str], tool_overrides: Mapping[str, str] | None) -> list[str]:
    """The agent's tool ids with rollout `toolOverrides` applied (one swap each, not chained),
    in order, each once."""
    overrides = tool_overrides or {}
    out: list[str] = []
    for tool_id in agent_tool_ids:
        swapped = overrides.get(tool_id, tool_id)
        if isinstance(swapped, str) and swapped and swapped not in out:
            out.append(swapped)
    return out


def build_toolset(
    tools: Mapping[str, ToolDefinition],
    tool_ids: Iterable[str],
    *,
    user: Mapping[str, Any],
    event_base: Mapping[str, Any],
    on_trace: Callable[[ToolTrace], None] | None = None,
    allowed_tags: frozenset[str] = frozenset(),
    with_approvals: bool = False,
) -> Toolset:
    """The toolset of `tool_ids` (already swapped) from the loaded `tools`; no database access.

    `allowed_tags` (`scope.tag`) are the widget tags tools may emit in this chat app; the markup
    of any other tag is stripped from results before the model sees them. `with_approvals`: a
    call of a tool whose `approval` requires it waits for a person (the turn's own agent); without
    it, such a call is refused (a collaborator's turn cannot wait).
    """
    toolset = Toolset()
    access = AccessRules(user)
    base = {key: event_base.get(key) for key in EVENT_FIELDS}
    if base["userId"] is None:
        base["userId"] = user.get("userId")
    if base["customData"] is None:
        base["customData"] = dict(user.get("customData") or {})

    def record(trace: ToolTrace) -> None:
        toolset.traces.append(trace)
        if on_trace is not None:
            try:
                on_trace(trace)
            except Exception:  # a listener's failure is not the tool's
                logger.exception("on_trace failed for tool %s", trace.tool_id)

    for tool_id in tool_ids:
        tool = tools.get(tool_id)
        if tool is None:
            toolset.skipped[tool_id] = "missing"
            continue
        if tool.lifecycle_status == LifecycleStatus.RETIRED:
            toolset.skipped[tool_id] = "retired"
            continue
        if not access.allow(tool.access_rules, subject=f"tool {tool_id}"):
            toolset.skipped[tool_id] = "denied by its access rules"
            continue
        runnable = _Runnable.of(tool)
        for function in tool.function_schema or []:
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                continue
            name = function["name"]
            if name in toolset.tool_ids:
                # The agent write refuses this (docs/api.md, "Agents"); overrides can still bring it about.
                toolset.skipped[tool_id] = f"function {name} is already offered by {toolset.tool_ids[name]}"
                logger.warning("tool %s: function %s is already offered by %s", tool_id, name, toolset.tool_ids[name])
                continue
            toolset.tool_ids[name] = tool_id
            toolset.specs.append(_spec(runnable, function, base, record, allowed_tags, _approval_of(tool, user), with_approvals))
    return toolset


def toolset_for(
    *,
    agent_tool_ids: list[str],
    tool_overrides: Mapping[str, str] | None,
    user: Mapping[str, Any],
    event_base: Mapping[str, Any],
    on_trace: Callable[[ToolTrace], None] | None = None,
    allowed_tags: frozenset[str] = frozenset(),
) -> Toolset:
    """The toolset a turn offers: reads the tools (one query), then build_toolset.

    `user`: wire fields userId, email, firstName, lastName, userType, roles, customData (access
    rules see them as `user.*`). `event_base`: userId, sessionId, chatAppId, agentId, customData,
    timezone. `on_trace` is called with each ToolTrace as its call ends (e.g. to stream it).
    """
    tool_ids = resolved_tool_ids(agent_tool_ids, tool_overrides)
    return build_toolset(tools_by_ids(tool_ids), tool_ids, user=user, event_base=event_base, on_trace=on_trace, allowed_tags=allowed_tags)
