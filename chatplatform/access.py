"""Access rules (SPEC.md AccessRule; issue: converse step 2) evaluated with cel-python.

Programs are compiled once per expression text and cached: compiling costs milliseconds,
evaluating a compiled program tens of microseconds. The variables a condition sees are
documented in docs/access-rules.md.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import celpy

logger = logging.getLogger("chatplatform.access")

# cel-python logs every evaluation error at ERROR; a failing condition is an expected outcome here.
logging.getLogger("celpy").setLevel(logging.CRITICAL)
logging.getLogger("Evaluator").setLevel(logging.CRITICAL)


# cel-python documents no thread safety for its parser and transpiler: compiles (cached, so rare)
# take turns; evaluating a compiled program is a plain call and runs on any thread at once.
_compiling = threading.Lock()


@functools.cache
def _celpy() -> Any:
    """cel-python and its environment, built at the first condition or when a server process warms
    up (chatplatform.asgi): not when every management command starts."""
    with _compiling:
        import celpy

        return celpy, celpy.Environment(runner_class=celpy.CompiledRunner)


class InvalidCondition(ValueError):
    """A condition that is not valid CEL; the message says where."""


@functools.lru_cache(maxsize=4096)
def compile_condition(expression: str) -> celpy.Runner:
    """The compiled program of a CEL expression; InvalidCondition when it does not parse."""
    celpy, environment = _celpy()
    try:
        with _compiling:
            return environment.program(environment.compile(expression))
    except celpy.CELParseError as exc:
        detail = " ".join(str(exc).split())[:300]
        raise InvalidCondition(f"not a valid CEL expression: {detail}") from None
    except Exception as exc:  # cel-python raises a few unrelated types for malformed input
        raise InvalidCondition(f"not a valid CEL expression ({exc.__class__.__name__})") from None


def activation_for(user: Mapping[str, Any]) -> dict[str, Any]:
    """The variables of a condition, from a user's wire fields (userId, email, ..., customData)."""
    custom = user.get("customData") or {}
    account = {"id": custom.get("accountId"), "type": custom.get("accountType"), "region": custom.get("region")}
    celpy, _ = _celpy()
    return {
        "user": celpy.json_to_cel(dict(user)),
        "account": celpy.json_to_cel({k: v for k, v in account.items() if v is not None}),
        "customData": celpy.json_to_cel(dict(custom)),
    }


def condition_holds(expression: str, activation: Mapping[str, Any]) -> bool:
    """True only when the condition evaluates to boolean true; an evaluation error is "not holding"."""
    try:
        result = compile_condition(expression).evaluate(dict(activation))
    except InvalidCondition:
        return False
    except Exception:  # CELEvalError and friends: a missing field, a type mismatch
        return False
    return isinstance(result, _celpy()[0].celtypes.BoolType) and bool(result)


class AccessRules:
    """Access rules checked for one user (`user`: wire fields userId, email, ..., customData).

    The user's CEL values are built when a first condition is evaluated: most agents and tools
    have no rules, and converting a user costs a good part of a turn's checks."""

    def __init__(self, user: Mapping[str, Any]) -> None:
        self._user = user
        self._activation: dict[str, Any] | None = None

    def _holds(self, condition: str) -> bool:
        if self._activation is None:
            self._activation = activation_for(self._user)
        return condition_holds(condition, self._activation)

    def allow(self, rules: Iterable[Mapping[str, Any]] | None) -> bool:
        """Lowest `order` first; the first rule whose condition holds (or that has none) decides.

        Absent or empty rules: open to everyone. Rules present but none matching: denied.
        """
        ordered = sorted(rules or [], key=lambda rule: (rule.get("order") is None, rule.get("order") or 0))
        if not ordered:
            return True
        for rule in ordered:
            condition = rule.get("condition")
            if not condition or self._holds(condition):
                return rule.get("effect") == "allow"
        return False
