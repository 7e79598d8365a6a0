"""Verification (the `verifyResponse` feature): a model grades the answer; at or beyond the chat app's
`autoRepromptThreshold` the agent is asked once more and its correction streams after a heading,
so the concatenated deltas always equal the final answer (docs/decisions.md)."""

from __future__ import annotations

import re
import time
from typing import Any

from chat.turn.prompt import TurnContext
from chat.turn.reply import Transcript, stream, trace
from chat.turn.usage import Ledger, ms_since
from chatplatform import llm

VERIFICATION_TIMEOUT_SECONDS = 30.0
CORRECTIONS_HEADING = "\n\n## Corrections\n\n"
GRADES = ("A", "B", "C", "F")  # best to worst; a reprompt happens at or beyond the threshold
VERIFICATION_PROMPT = (
    "You review an assistant's answer to a user's question. Grade it: A (correct and complete), "
    "B (minor issues), C (significant errors or omissions), F (wrong, off-topic or harmful). "
    "Reply with the grade inside <grade></grade>, then what should be corrected inside <feedback></feedback>."
)
_GRADE = re.compile(r"<grade>\s*([ABCF])\s*</grade>", re.IGNORECASE)
_FEEDBACK = re.compile(r"<feedback>(.*?)</feedback>", re.DOTALL | re.IGNORECASE)


def parse_grade(text: str) -> tuple[str | None, str]:
    grade = _GRADE.search(text)
    feedback = _FEEDBACK.search(text)
    return (grade.group(1).upper() if grade else None), (feedback.group(1).strip() if feedback else "")


async def verify(
    transcript: Transcript,
    context: TurnContext,
    ledger: Ledger,
    *,
    system_prompt: str,
    history: list[llm.HistoryMessage],
    answer: str,
    tools: list[llm.ToolSpec],
) -> tuple[str, list[dict[str, Any]]]:
    """The answer (corrected when the grade calls for it) and the message's `verifications`."""
    emit, model = transcript.emit, context.verification_model
    started = time.perf_counter()
    try:
        graded = await llm.complete(
            model=model,
            system_prompt=VERIFICATION_PROMPT,
            prompt=f"Question:\n{context.message}\n\nAnswer:\n{answer}",
            timeout=VERIFICATION_TIMEOUT_SECONDS,
        )
    except llm.ModelError as exc:
        failed = {"stage": "verification", "model": model, "durationMs": ms_since(started), "error": str(exc)}
        ledger.traces.append(failed)
        trace(emit, context, failed)
        return answer, [{"grade": None, "model": model, "error": str(exc)}]
    grade, feedback = parse_grade(graded.text)
    threshold = (context.features.get("verifyResponse") or {}).get("autoRepromptThreshold")
    reprompt = grade is not None and threshold in GRADES and GRADES.index(grade) >= GRADES.index(threshold)
    trace(emit, context, ledger.add("verification", model, graded.usage, ms_since(started), grade=grade))
    verification: dict[str, Any] = {"grade": grade, "model": model, "feedback": feedback, "reprompted": reprompt}
    if not reprompt:
        return answer, [verification]
    started = time.perf_counter()
    transcript.delta(CORRECTIONS_HEADING)
    correction = (
        f"A reviewer graded your previous answer {grade}."
        + (f" The reviewer says: {feedback}" if feedback else "")
        + "\nAnswer my previous question again, correctly. Give only the corrected answer."
    )
    corrected = await stream(
        transcript,
        model=context.model,
        system_prompt=system_prompt,
        history=[*history, llm.HistoryMessage("user", context.message), llm.HistoryMessage("assistant", answer)],
        message=correction,
        tools=tools,
    )
    trace(emit, context, ledger.add("reprompt", corrected.model, corrected.usage, ms_since(started)))
    return f"{answer}{CORRECTIONS_HEADING}{corrected.text}", [verification]
