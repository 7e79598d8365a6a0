"""Local functions shipped with the platform: offline, deterministic enough for demos and tests.

Each takes `(event, params)` (see tools.registry) and returns a JSON-serialisable value. A bad
argument raises ValueError; the executor turns that into the tool's error result for the model.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from tools.registry import agent_function

AGENT_TOOL = {"agent-tool": "true"}


@agent_function(
    name="current_time",
    tags=AGENT_TOOL,
    description="The current date and time in a timezone (IANA name such as Europe/Paris; default: the user's, else UTC).",
    parameters={"timezone": {"description": "IANA timezone name, e.g. America/New_York", "type": "string", "required": False}},
)
def current_time(event: dict[str, Any], params: dict[str, Any]) -> dict[str, str]:
    name = params.get("timezone") or event.get("timezone") or "UTC"
    if not isinstance(name, str):
        raise ValueError("timezone must be a string")
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown timezone {name!r}: use an IANA name such as Europe/Paris") from None
    now = datetime.now(UTC).astimezone(zone)
    return {"timezone": name, "iso": now.isoformat(timespec="seconds"), "weekday": now.strftime("%A")}


# --- calculator: arithmetic over an AST whitelist, never eval() -------------------------------

MAX_EXPRESSION_LENGTH = 500
MAX_EXPONENT = 1000  # 10**1000 is already far beyond what a model needs; 9**9**9 would hang the worker
MAX_RESULT_BITS = 4096  # about 1,200 decimal digits

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}


def _check_size(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > MAX_RESULT_BITS:
        raise ValueError("result is too large")
    return value


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow):
            if abs(right) > MAX_EXPONENT:
                raise ValueError(f"exponent must be at most {MAX_EXPONENT}")
            if isinstance(left, int) and isinstance(right, int) and abs(left).bit_length() * abs(right) > MAX_RESULT_BITS:
                raise ValueError("result is too large")
        return _check_size(_BINARY[type(node.op)](left, right))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
        and len(node.args) <= 10
    ):
        return _check_size(_FUNCTIONS[node.func.id](*(_evaluate(arg) for arg in node.args)))
    raise ValueError(
        f"unsupported element {type(node).__name__}: use numbers, + - * / // % **, parentheses, pi, e and {sorted(_FUNCTIONS)}"
    )


def evaluate_expression(expression: object) -> int | float:
    """The value of an arithmetic expression; ValueError for anything else."""
    if not isinstance(expression, str) or not expression.strip():
        raise ValueError("expression is required")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"expression must be at most {MAX_EXPRESSION_LENGTH} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"not an arithmetic expression: {exc.msg}") from None
    try:
        result = _evaluate(tree)
    except (ZeroDivisionError, OverflowError, TypeError) as exc:
        raise ValueError(str(exc) or exc.__class__.__name__) from None
    if isinstance(result, complex):
        raise ValueError("result is not a real number")
    return result


@agent_function(
    name="calculator",
    tags=AGENT_TOOL,
    description="Evaluates an arithmetic expression: numbers, + - * / // % **, parentheses, pi, e, sqrt, log, sin, cos, tan, abs, round.",
    parameters={"expression": {"description": "The expression, e.g. (2 + 3) * 4 / 7", "type": "string", "required": True}},
)
def calculator(event: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    expression = params.get("expression")
    return {"expression": expression, "result": evaluate_expression(expression)}


@agent_function(
    name="echo",
    tags=AGENT_TOOL,
    description="Returns the text it is given (for demos and tests).",
    parameters={"text": {"description": "The text to echo back", "type": "string", "required": True}},
)
def echo(event: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    return {"text": params.get("text", "")}
