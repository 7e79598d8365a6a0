"""The selection step of instruction augmentation (docs/api.md, "The system prompt"): one model call picks, by their
descriptions, which candidate directives apply to the user's query.

It never fails a turn: a provider error, a timeout or an answer that cannot be read selects
nothing, and the reason is kept for the turn's traces.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from chatplatform import llm
from directives.models import SemanticDirective

SYSTEM_PROMPT = (
    "You choose which instruction snippets apply to a user's message. Each candidate has an id and a "
    "description saying when it applies. Choose only candidates whose description clearly fits the "
    "message; choosing none is fine. Answer with the JSON array of the chosen ids inside "
    '<answer></answer>, for example <answer>["id-one", "id-two"]</answer> or <answer>[]</answer>.'
)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


@dataclass(frozen=True)
class Selection:
    """What the step chose, what it cost, and why it chose nothing when it failed."""

    chosen: list[SemanticDirective] = field(default_factory=list)
    usage: llm.Usage = field(default_factory=llm.Usage)
    model: str = ""
    duration_ms: int = 0
    called: bool = False
    error: str | None = None


def selection_prompt(candidates: Sequence[SemanticDirective], query: str) -> str:
    lines = ["Candidates:"]
    lines += [f"- id: {json.dumps(directive.directive_id)}\n  description: {directive.description}" for directive in candidates]
    lines += ["", "User message:", query, "", "Which ids apply? Answer as <answer>[...]</answer>."]
    return "\n".join(lines)


def parse_answer(text: str) -> list[str] | None:
    """The ids of the last `<answer>[...]</answer>`; None when there is no readable array."""
    matches = _ANSWER.findall(text)
    if not matches:
        return None
    try:
        ids = json.loads(matches[-1].strip())
    except ValueError:
        return None
    if not isinstance(ids, list) or not all(isinstance(item, str) for item in ids):
        return None
    return ids


async def select(*, candidates: Sequence[SemanticDirective], query: str, model: str, timeout: float) -> Selection:
    """Ask `model` once which candidates apply; no call at all without candidates.

    Ids the model invents are dropped. An id shared by candidates of two scopes selects both
    (ids are only unique within a scope, and the model sees ids, not scopes).
    """
    if not candidates:
        return Selection()
    started = time.perf_counter()
    try:
        completion = await llm.complete(
            model=model, system_prompt=SYSTEM_PROMPT, prompt=selection_prompt(candidates, query), timeout=timeout
        )
    except llm.ModelError as exc:
        return Selection(model=model, duration_ms=_ms_since(started), called=True, error=str(exc))
    ids = parse_answer(completion.text)
    duration = _ms_since(started)
    if ids is None:
        return Selection(
            usage=completion.usage, model=model, duration_ms=duration, called=True, error="the answer held no <answer>[...]</answer>"
        )
    wanted = set(ids)
    chosen = [directive for directive in candidates if directive.directive_id in wanted]
    return Selection(chosen=chosen, usage=completion.usage, model=model, duration_ms=duration, called=True)


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
