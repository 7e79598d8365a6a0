"""The system prompt of a turn (docs/api.md, "The system prompt"): `basePrompt` rendered as
Handlebars, then the tags' instructions.

Placeholders: `user.email`, `user.firstName`, `user.lastName`, `user.userId`, `user.userType`,
`customData.<field>`, `company.name`, plus `{{tag-instructions}}` where the tag instructions go
(appended after a blank line when the template has no such placeholder). A missing value renders
empty. A template that does not compile is refused when the agent is written (`check_template`);
one stored before that rule is used as written, with a warning each time. Values are inserted
verbatim: Handlebars' HTML escaping (`'` → `&#x27;`) has no place in a prompt.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any

logger = logging.getLogger(__name__)

TAG_INSTRUCTIONS = "tag-instructions"
_TAG_PLACEHOLDER = re.compile(r"\{\{\{?\s*tag-instructions\s*\}?\}\}")
# pybars keeps its code builder on the Compiler class, so every compiler in the process shares it:
# two compiles at once interleave their code (a garbled or raw prompt). One compile at a time.
_compiling = threading.Lock()


class TemplateError(ValueError):
    """`basePrompt` is not a Handlebars template pybars can compile."""


@functools.cache
def _pybars() -> Any:
    """pybars builds its grammar when imported (the slowest import of the project): at the first
    prompt rendered, or when a server process warms up (chatplatform.asgi)."""
    import pybars

    return pybars


@functools.lru_cache(maxsize=1024)
def compiled(template: str) -> Any:
    """The compiled template; raises TemplateError (never cached, so never mistaken for the template)."""
    pybars = _pybars()
    with _compiling:
        try:
            return pybars.Compiler().compile(template)
        except Exception as exc:  # pybars raises its own and lexer errors for malformed templates
            raise TemplateError(f"does not compile as a Handlebars template ({exc})") from exc


def check_template(template: str) -> None:
    """Raise TemplateError when `template` would not render (the agent write's rule): it must
    compile, and render for a user with every field filled (a missing partial or a helper called
    without its arguments fails only when rendered)."""
    sample = {key: "x" for key in ("userId", "email", "firstName", "lastName", "userType")}
    try:
        str(compiled(template)(_context(sample, company_name="x", tag_instructions="x")))
    except TemplateError:
        raise
    except Exception as exc:
        raise TemplateError(f"does not render as a Handlebars template ({exc})") from exc


def _context(user: Mapping[str, Any], *, company_name: str, tag_instructions: str) -> dict[str, Any]:
    return {
        "user": _verbatim({key: user.get(key) for key in ("userId", "email", "firstName", "lastName", "userType")}),
        "customData": _verbatim(user.get("customData") or {}),
        "company": _verbatim({"name": company_name}),
        TAG_INSTRUCTIONS: _verbatim(tag_instructions),
    }


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
    try:
        text = str(compiled(base_prompt)(_context(user, company_name=company_name, tag_instructions=tag_instructions)))
    except Exception as exc:  # stored before templates were checked, or a helper misused at run time ({{#each}} over a number)
        logger.warning("basePrompt failed to render (%s); used as written", exc)
        text = _TAG_PLACEHOLDER.sub(lambda _: tag_instructions, base_prompt)
    if tag_instructions and not has_placeholder:
        text = f"{text.rstrip()}\n\n{tag_instructions}"
    return text.strip()
