"""Access rules (docs/access-rules.md) evaluated with cel-python.

Programs are compiled once per expression text and cached: compiling costs milliseconds,
evaluating a compiled program tens of microseconds. The variables a condition sees are
documented in docs/access-rules.md.

A condition with a comprehension (`map`, `filter`, `all`, `exists`, `exists_one`) can cost the
square of its input or worse (one nested in another over a list of the user's customData), so
its evaluation runs under a time budget, CHAT_ACCESS_RULE_BUDGET_MS; past it the rules deny
(docs/access-rules.md). Without a comprehension the cost only grows with the input's size.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from django.conf import settings

from chatplatform import inflight

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
def compile_condition(expression: str) -> celpy.CompiledRunner:
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


class OverBudget(Exception):
    """A condition's evaluation went past CHAT_ACCESS_RULE_BUDGET_MS."""


class _Stop(BaseException):
    """Raised inside an evaluation past its deadline. Not an Exception: cel-python turns those
    into evaluation errors (a condition that does not hold), which would let the next rule decide."""


_COMPREHENSION = re.compile(r"\.\s*(?:map|filter|all|exists|exists_one)\s*\(")
# The tracer looks at the clock once every this many calls: a call costs well under a microsecond.
_CALLS_PER_CLOCK_READ = 256


def _run(program: celpy.CompiledRunner, activation: Mapping[str, Any]) -> Any:
    """What cel-python's compiled runner's `evaluate` does, with globals of this call's own:
    the runner keeps the activation on the shared program and in its module's globals, so two
    threads evaluating one cached program at once could each read the other's user."""
    celpy, _ = _celpy()
    transpiler = program.tp
    bound = transpiler.base_activation.clone()
    bound.identifiers.load_values(dict(activation))
    scope = dict(celpy.evaluation.result.__globals__)
    scope["base_activation"] = bound
    exec(transpiler.executable_code, scope)  # cel-python's own transpiled code
    value = scope["CEL"]
    if isinstance(value, celpy.evaluation.CELEvalError):
        raise value
    return value


def _in_cel(frame: FrameType) -> bool:
    """A call into cel-python's code or the program it transpiled: stopping there leaves no lock
    of another library (logging's, say) held."""
    filename = frame.f_code.co_filename
    return filename == "<string>" or filename.startswith(_celpy_folder())


@functools.cache
def _celpy_folder() -> str:
    return str(Path(_celpy()[0].__file__).parent)


def _run_within(program: celpy.CompiledRunner, activation: Mapping[str, Any], budget: float) -> Any:
    """`_run` under a deadline: a trace function, set for this thread only while the program
    runs, counts the Python calls the evaluation makes and stops it once the deadline passed, or
    once the process shuts down (docs/deploy.md, "Graceful drain (SIGTERM)": a thread busy evaluating would hold
    the process past its drain grace, whatever budget an operator set)."""
    deadline = time.monotonic() + budget
    calls = 0
    _celpy_folder()

    def tracer(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        calls += 1
        if calls % _CALLS_PER_CLOCK_READ == 0 and (time.monotonic() > deadline or not inflight.accepting()) and _in_cel(frame):
            raise _Stop
        return None  # no line events: only calls are counted

    previous = sys.gettrace()  # a debugger's or coverage's, put back afterwards
    sys.settrace(tracer)
    try:
        return _run(program, activation)
    except _Stop:
        raise OverBudget from None
    finally:
        sys.settrace(previous)


def condition_holds(expression: str, activation: Mapping[str, Any]) -> bool:
    """True only when the condition evaluates to boolean true; an evaluation error is "not holding".
    OverBudget when a condition with a comprehension ran past CHAT_ACCESS_RULE_BUDGET_MS."""
    try:
        program = compile_condition(expression)
    except InvalidCondition:
        return False
    try:
        if _COMPREHENSION.search(expression):
            result = _run_within(program, activation, settings.CHAT_ACCESS_RULE_BUDGET_MS / 1000)
        else:
            result = _run(program, activation)
    except OverBudget:
        raise
    except Exception:  # CELEvalError and friends: a missing field, a type mismatch
        return False
    return isinstance(result, _celpy()[0].celtypes.BoolType) and bool(result)


def approval_required(rule: Mapping[str, Any] | None, *, user: Mapping[str, Any], arguments: Mapping[str, Any], tool_id: str) -> bool:
    """Whether a tool call waits for a person (docs/api.md, "Approvals"): the tool's `approval.required`,
    true, or a condition over `user.*`, `customData.*`, `args.*` and `tool.toolId`. A condition
    that cannot be decided (an error, or past its budget) requires the approval."""
    if not rule:
        return False
    required = rule.get("required")
    if not isinstance(required, str):
        return required is True
    celpy, _ = _celpy()
    activation = {**activation_for(user), "args": celpy.json_to_cel(dict(arguments)), "tool": celpy.json_to_cel({"toolId": tool_id})}
    try:
        program = compile_condition(required)
        result = _run_within(program, activation, settings.CHAT_ACCESS_RULE_BUDGET_MS / 1000)
    except Exception:
        logger.warning("the approval condition of tool %s could not be decided; the call waits for a person", tool_id, exc_info=True)
        return True
    return not (isinstance(result, celpy.celtypes.BoolType) and not bool(result))


class AccessRules:
    """Access rules checked for one user (`user`: wire fields userId, email, ..., customData).

    The user's CEL values are built when a first condition is evaluated: most agents and tools
    have no rules, and converting a user costs a good part of a turn's checks."""

    def __init__(self, user: Mapping[str, Any]) -> None:
        self._user = user
        self._activation: dict[str, Any] | None = None
        # Why the last `allow` denied when a rule ran out of its budget (for the caller's message); else None.
        self.over_budget: str | None = None

    def _holds(self, condition: str) -> bool:
        if self._activation is None:
            self._activation = activation_for(self._user)
        return condition_holds(condition, self._activation)

    def allow(self, rules: Iterable[Mapping[str, Any]] | None, *, subject: str = "") -> bool:
        """Lowest `order` first; the first rule whose condition holds (or that has none) decides.

        Absent or empty rules: open to everyone. Rules present but none matching: denied. A rule
        whose condition runs past its budget denies, whatever the later rules say (they might
        have denied too). `subject` names the rules' owner in the log ("agent demo").
        """
        self.over_budget = None
        ordered = sorted(rules or [], key=lambda rule: (rule.get("order") is None, rule.get("order") or 0))
        if not ordered:
            return True
        for position, rule in enumerate(ordered, start=1):
            condition: Any = rule.get("condition")  # a JSON value
            try:
                if not condition or self._holds(condition):
                    return rule.get("effect") == "allow"
            except OverBudget:
                budget = settings.CHAT_ACCESS_RULE_BUDGET_MS
                name = f"access rule {position}" + (f" (order {rule['order']})" if rule.get("order") is not None else "")
                self.over_budget = (
                    f"{name} took longer than its budget of {budget} ms to evaluate"
                    if inflight.accepting()
                    else f"{name} was still being evaluated when the server began shutting down"
                )
                logger.warning(
                    "%s of %s denied user %s: its condition %r ran past the budget of %d ms (CHAT_ACCESS_RULE_BUDGET_MS)",
                    name,
                    subject or "a definition",
                    self._user.get("userId"),
                    condition[:200],
                    budget,
                )
                return False
        return False
