"""Usage and cost: every model call of a turn, summed into the answer's ChatMessageUsage and listed in its traces."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from chatplatform import llm, metrics


def usage_fields(calls: list[tuple[str, llm.Usage]]) -> dict[str, Any]:
    """ChatMessageUsage of these calls, each priced with its own model's CHAT_MODEL_PRICES entry."""
    input_tokens = sum(usage.input_tokens for _, usage in calls)
    output_tokens = sum(usage.output_tokens for _, usage in calls)
    costs = [llm.cost(model, usage, settings.CHAT_MODEL_PRICES) for model, usage in calls]
    input_cost = round(sum(c.input_cost for c in costs), 10)
    output_cost = round(sum(c.output_cost for c in costs), 10)
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
        "inputCost": input_cost,
        "outputCost": output_cost,
        "totalCost": round(input_cost + output_cost, 10),
    }


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

    def usage(self) -> dict[str, Any]:
        return usage_fields(self.calls)
