"""Usage and cost: every model call of a turn, summed into the answer's ChatMessageUsage and listed in its traces."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from chat.sessions.usage import usage_fields
from chatplatform import llm, metrics


def ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


@dataclass
class Ledger:
    """Every model call of a turn, and the traces of its stages (model calls, tools, side steps)."""

    calls: list[tuple[str, llm.Usage]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)

    def add(self, stage: str, model: str, usage: llm.Usage, duration_ms: int, **details: Any) -> dict[str, Any]:
        """Count a model call and return its trace (already recorded)."""
        self.calls.append((model, usage))
        metrics.model_called(stage, model, usage.input_tokens, usage.output_tokens, duration_ms / 1000)
        trace = {
            "stage": stage,
            "model": model,
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "durationMs": duration_ms,
            **details,
        }
        self.traces.append(trace)
        return trace

    def restore(self, state: dict[str, Any]) -> None:
        """The calls and traces of a paused turn, for the turn that goes on with it."""
        self.calls = [
            (model, llm.Usage(input_tokens, output_tokens, requests)) for model, input_tokens, output_tokens, requests in state["calls"]
        ]
        self.traces = list(state["traces"])

    def usage(self) -> dict[str, Any]:
        return usage_fields(self.calls)
