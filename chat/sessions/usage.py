"""ChatMessageUsage: tokens and USD cost of model calls, each priced with its own model's
CHAT_MODEL_PRICES entry (docs/api.md, "Usage and cost")."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from chatplatform import llm


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
