"""The system prompt of a turn (CONTRACT §7): `basePrompt` rendered as Handlebars, then the tags' instructions.

Placeholders (SPEC.md "Prompt placeholders"): `user.email`, `user.firstName`, `user.lastName`,
`user.userId`, `user.userType`, `customData.<field>`, `company.name`, plus `{{tag-instructions}}`
where the tag instructions go (appended after a blank line when the template has no such
placeholder). A missing value renders empty, and a template that does not compile is used as
written: a prompt is never the reason a turn fails. Values are inserted verbatim: Handlebars'
HTML escaping (`'` → `&#x27;`) has no place in a prompt.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

TAG_INSTRUCTIONS = "tag-instructions"
_TAG_PLACEHOLDER = re.compile(r"\{\{\{?\s*tag-instructions\s*\}?\}\}")


@functools.cache
def _pybars() -> Any:
    """pybars builds its grammar when imported (the slowest import of the project): at the first
    prompt rendered, not when Django starts."""
    import pybars

    return pybars


@functools.cache
def _compiler() -> Any:
    return _pybars().Compiler()


@functools.lru_cache(maxsize=1024)
def _compiled(template: str) -> Any:
    try:
        return _compiler().compile(template)
    except Exception as exc:  # pybars raises its own and lexer errors for malformed templates
        logger.warning("basePrompt does not compile as Handlebars (%s); used as written", exc)
        return None


def _verbatim(value: Any) -> Any:
    """Strings wrapped so that pybars inserts them unescaped (it leaves its own `strlist` alone)."""
    if isinstance(value, str):
        return _pybars().strlist([value]) if value else ""
    if isinstance(value, Mapping):
        return {str(key): _verbatim(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_verbatim(item) for item in value]
    return value


def render_system_prompt(*, base_prompt: str, user: Mapping[str, Any], company_name: str, tag_instructions: str) -> str:
    """The rendered prompt. `user` holds the wire fields (userId, email, firstName, lastName, userType, customData)."""
    has_placeholder = bool(_TAG_PLACEHOLDER.search(base_prompt))
    template = _compiled(base_prompt)
    context = {
        "user": _verbatim({key: user.get(key) for key in ("userId", "email", "firstName", "lastName", "userType")}),
        "customData": _verbatim(user.get("customData") or {}),
        "company": _verbatim({"name": company_name}),
        TAG_INSTRUCTIONS: _verbatim(tag_instructions),
    }
    if template is None:
        text = _TAG_PLACEHOLDER.sub(lambda _: tag_instructions, base_prompt)
    else:
        try:
            text = str(template(context))
        except Exception as exc:  # a helper misused at run time (e.g. {{#each}} over a number)
            logger.warning("basePrompt failed to render (%s); used as written", exc)
            text = _TAG_PLACEHOLDER.sub(lambda _: tag_instructions, base_prompt)
    if tag_instructions and not has_placeholder:
        text = f"{text.rstrip()}\n\n{tag_instructions}"
    return text.strip()
