"""Titles: a new session is titled after its first answer, never delaying it (docs/decisions.md)."""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any

from django.conf import settings

from chat.sessions.services import session_add_usage, session_set_title
from chat.sessions.usage import usage_fields
from chatplatform import llm
from chatplatform.db import on_db_thread

logger = logging.getLogger(__name__)

TITLE_TIMEOUT_SECONDS = 15.0
TITLE_PROMPT = (
    "Write a title of 3 to 8 words for a conversation that starts with the exchange below. "
    "Answer with the title only: no quotes, no punctuation at the end."
)


def fallback_title(question: str) -> str:
    """The question's first words: the title when no model gives one."""
    return " ".join(question.split()[:8])[:200]


def clean_title(text: str, question: str) -> str:
    """The model's title on one line, without quotes or Markdown, at most 8 words; the question's
    first words when the model gave nothing usable."""
    line = next((line for line in text.strip().splitlines() if line.strip()), "")
    line = re.sub(r"^(title\s*:\s*)", "", line.strip().strip("#*").strip(), flags=re.IGNORECASE)
    words = line.strip("\"'“”` ").rstrip(".!").split()
    return " ".join(words[:8])[:200] if words else fallback_title(question)


def title_without_model() -> bool:
    """With the `offline` title model the title costs no call: it is stored with the answer."""
    return settings.CHAT_TITLE_MODEL == "offline"


async def generate_title(*, question: str, answer: str) -> tuple[str, dict[str, Any]]:
    """A 3–8 word title from the first exchange with CHAT_TITLE_MODEL, and its usage."""
    model = settings.CHAT_TITLE_MODEL
    if model == "offline":  # it only echoes
        return fallback_title(question), usage_fields([])
    completion = await llm.complete(
        model=model, system_prompt=TITLE_PROMPT, prompt=f"Question: {question}\n\nAnswer: {answer[:4000]}", timeout=TITLE_TIMEOUT_SECONDS
    )
    return clean_title(completion.text, question), usage_fields([(model, completion.usage)])


async def title_session(*, session_id: uuid.UUID, question: str, answer: str) -> str | None:
    """Title an untitled session after its first answer; a title the user set meanwhile wins."""
    try:
        title, usage = await generate_title(question=question, answer=answer)
    except llm.ModelError as exc:
        logger.info("no title for session %s: %s", session_id, exc)
        title, usage = fallback_title(question), usage_fields([])
    if not title:
        return None
    written = await on_db_thread(session_set_title)(session_id=session_id, title=title, only_if_untitled=True)
    if usage["totalTokens"]:
        await on_db_thread(session_add_usage)(session_id=session_id, usage=usage)
    return title if written else None
