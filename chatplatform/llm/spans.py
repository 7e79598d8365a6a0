"""Model requests as GenAI spans, named and attributed as OpenTelemetry's GenAI conventions say
(docs/deploy.md, "Traces"); prompts and answers only when content capture is on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from chatplatform import telemetry
from chatplatform.llm.types import AssistantTurn, HistoryMessage, ModelRequest, ToolCall, ToolOutput, Usage
from chatplatform.model_names import ModelRef

# The conventions' gen_ai.provider.name values; the others are named as the platform names them.
_PROVIDER_NAMES = {"bedrock": "aws.bedrock"}


@contextmanager
def model_call(ref: ModelRef, request: ModelRequest) -> Iterator[Any]:
    """A `chat <model>` span around one model request; None when tracing is off."""
    if not telemetry.ENABLED:
        yield None
        return
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": _PROVIDER_NAMES.get(ref.provider, ref.provider),
        "gen_ai.request.model": request.model or ref.provider,
    }
    with telemetry.span(f"chat {request.model or ref.provider}", attributes) as span:
        if telemetry.CAPTURE_CONTENT:
            telemetry.content(span, "gen_ai.system_instructions", [{"type": "text", "content": request.system_prompt}])
            telemetry.content(span, "gen_ai.input.messages", [_message(message) for message in request.messages])
        try:
            yield span
        except Exception as exc:
            span.set_attribute("error.type", type(exc).__qualname__)
            raise


def model_answered(span: Any, *, text: str, usage: Usage, tool_calls: tuple[ToolCall, ...] = ()) -> None:
    """The response's usage and finish reason (and its text, with content capture) on the span."""
    if span is None:
        return
    reason = "tool_call" if tool_calls else "stop"
    span.set_attributes(
        {
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.response.finish_reasons": [reason],
        }
    )
    if telemetry.CAPTURE_CONTENT:
        parts = [{"type": "text", "content": text}] if text else []
        parts += [_call(call) for call in tool_calls]
        telemetry.content(span, "gen_ai.output.messages", [{"role": "assistant", "parts": parts, "finish_reason": reason}])


def _message(message: HistoryMessage | AssistantTurn | ToolOutput) -> dict[str, Any]:
    if isinstance(message, HistoryMessage):
        return {"role": message.role, "parts": [{"type": "text", "content": message.text}]}
    if isinstance(message, AssistantTurn):
        parts = [{"type": "text", "content": message.text}] if message.text else []
        return {"role": "assistant", "parts": parts + [_call(call) for call in message.tool_calls]}
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": message.call.id, "response": message.content}]}


def _call(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
