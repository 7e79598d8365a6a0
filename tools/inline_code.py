"""The `code` rule of `inline` tools: one JavaScript function expression, checked without running it.

QuickJS has no parse-only entry point in its Python binding, so the check is built from two
guarantees of the language and one of our own:

1. A script is parsed completely before any of it runs. The engine is given
   `throw <sentinel>; function <probe>() { return (<code>); }`: a syntax error anywhere surfaces
   as SyntaxError, and otherwise the first statement throws before anything else executes. Only
   the hoisted `<probe>` declaration comes into being; its body is never called at this stage.
   `<probe>.toString()` must then be the whole declaration, which proves `code` did not close the
   probe early and smuggle statements outside it.
2. A small tokenizer checks that `code` is exactly one function expression (`function …{…}`,
   `async function`, generators, or an arrow function) and nothing after it: no call, no comma,
   no second statement. An IIFE like `(function(){ while(true){} })()` is refused here.
3. Only then is `<probe>()` called, which merely evaluates a function expression (creating a
   function object runs none of its body), and the result must be `typeof … === "function"`.

Every engine call runs in a fresh Context under a time, memory and stack limit, with no file,
network or timer API in the engine, so even a tokenizer mistake cannot hang or escape.
"""

from __future__ import annotations

import re
import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import quickjs

MAX_CODE_LENGTH = 100_000
TIME_LIMIT_SECONDS = 0.5
MEMORY_LIMIT_BYTES = 32 * 1024 * 1024
STACK_LIMIT_BYTES = 512 * 1024

EXPECTED_FORM = "must be a single JavaScript function expression, e.g. `function (event, params) { ... }` or `async (event, params) => ...`"

# After these words a `/` starts a regular expression, not a division.
_KEYWORDS_BEFORE_EXPRESSION = {
    "return",
    "typeof",
    "instanceof",
    "in",
    "of",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "do",
    "else",
    "yield",
    "await",
}
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")", "]", "}"}

Token = tuple[str, str]  # (kind, text); kind is name, num, str, tpl, re or p (punctuator)


class InvalidCode(ValueError):
    """`code` breaks the rule; the message says how (without the field name)."""


class _Malformed(Exception):
    pass


class _Tokenizer:
    """Just enough of JavaScript's lexical grammar to see brackets, commas and semicolons at their
    real nesting depth: strings, template literals (with nested `${}`), comments and regular
    expression literals are consumed whole so that the brackets inside them do not count."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.pos = 0

    def tokens(self, *, in_template: bool = False) -> list[Token]:
        out: list[Token] = []
        depth = 0
        src = self.src
        while self.pos < len(src):
            ch = src[self.pos]
            nxt = src[self.pos + 1] if self.pos + 1 < len(src) else ""
            if ch.isspace():
                self.pos += 1
            elif ch == "/" and nxt == "/":
                end = src.find("\n", self.pos)
                self.pos = len(src) if end < 0 else end
            elif ch == "/" and nxt == "*":
                end = src.find("*/", self.pos + 2)
                if end < 0:
                    raise _Malformed("unterminated comment")
                self.pos = end + 2
            elif ch in "'\"":
                out.append(("str", self._string(ch)))
            elif ch == "`":
                out.append(("tpl", self._template()))
            elif ch == "/" and self._regex_allowed(out[-1] if out else None):
                out.append(("re", self._regex()))
            elif ch.isdigit() or (ch == "." and nxt.isdigit()):
                start = self.pos
                while self.pos < len(src) and (src[self.pos].isalnum() or src[self.pos] in "._"):
                    self.pos += 1
                out.append(("num", src[start : self.pos]))
            elif ch.isalpha() or ch in "_$\\" or ord(ch) > 127:
                start = self.pos
                while self.pos < len(src) and (src[self.pos].isalnum() or src[self.pos] in "_$\\" or ord(src[self.pos]) > 127):
                    self.pos += 1
                out.append(("name", src[start : self.pos]))
            else:
                for punct in ("=>", "++", "--", "..."):
                    if src.startswith(punct, self.pos):
                        break
                else:
                    punct = ch
                if in_template:
                    if punct == "{":
                        depth += 1
                    elif punct == "}":
                        if depth == 0:
                            self.pos += 1
                            return out
                        depth -= 1
                out.append(("p", punct))
                self.pos += len(punct)
        if in_template:
            raise _Malformed("unterminated template literal")
        return out

    @staticmethod
    def _regex_allowed(previous: Token | None) -> bool:
        if previous is None:
            return True
        kind, text = previous
        if kind == "p":
            return text not in {")", "]", "++", "--"}
        if kind == "name":
            return text in _KEYWORDS_BEFORE_EXPRESSION
        return False

    def _string(self, quote: str) -> str:
        start = self.pos
        self.pos += 1
        while self.pos < len(self.src):
            ch = self.src[self.pos]
            if ch == "\\":
                self.pos += 2
                continue
            if ch == quote:
                self.pos += 1
                return self.src[start : self.pos]
            if ch == "\n":
                break
            self.pos += 1
        raise _Malformed("unterminated string literal")

    def _template(self) -> str:
        start = self.pos
        self.pos += 1
        while self.pos < len(self.src):
            ch = self.src[self.pos]
            if ch == "\\":
                self.pos += 2
            elif ch == "`":
                self.pos += 1
                return self.src[start : self.pos]
            elif ch == "$" and self.src.startswith("${", self.pos):
                self.pos += 2
                self.tokens(in_template=True)
            else:
                self.pos += 1
        raise _Malformed("unterminated template literal")

    def _regex(self) -> str:
        start = self.pos
        self.pos += 1
        in_class = False
        while self.pos < len(self.src):
            ch = self.src[self.pos]
            if ch == "\\":
                self.pos += 2
                continue
            if ch == "\n":
                break
            if ch == "[":
                in_class = True
            elif ch == "]":
                in_class = False
            elif ch == "/" and not in_class:
                self.pos += 1
                while self.pos < len(self.src) and (self.src[self.pos].isalnum() or self.src[self.pos] in "_$"):
                    self.pos += 1
                return self.src[start : self.pos]
            self.pos += 1
        raise _Malformed("unterminated regular expression literal")


def _pairs(tokens: list[Token]) -> dict[int, int]:
    """Index of each opening bracket → index of its closing bracket."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for index, (kind, text) in enumerate(tokens):
        if kind != "p":
            continue
        if text in _OPENERS:
            stack.append(index)
        elif text in _CLOSERS:
            if not stack or _OPENERS[tokens[stack[-1]][1]] != text:
                raise _Malformed(f"unbalanced {text!r}")
            pairs[stack.pop()] = index
    if stack:
        raise _Malformed(f"unclosed {tokens[stack[-1]][1]!r}")
    return pairs


def _is_single_function_expression(tokens: list[Token]) -> bool:
    pairs = _pairs(tokens)
    # `(function () {...})` wrapped in parentheses is the same expression.
    while tokens and tokens[0] == ("p", "(") and pairs[0] == len(tokens) - 1:
        tokens = tokens[1:-1]
        pairs = _pairs(tokens)
    last = len(tokens) - 1

    def at(index: int) -> Token:
        return tokens[index] if 0 <= index <= last else ("", "")

    i = 0
    if at(0) == ("name", "async") and (at(1) in {("name", "function"), ("p", "(")} or (at(1)[0] == "name" and at(2) == ("p", "=>"))):
        i = 1
    if at(i) == ("name", "function"):
        i += 1
        if at(i) == ("p", "*"):
            i += 1
        if at(i)[0] == "name":
            i += 1
        if at(i) != ("p", "("):
            return False
        i = pairs[i] + 1
        return at(i) == ("p", "{") and pairs[i] == last
    if at(i)[0] == "name" and at(i + 1) == ("p", "=>"):
        body = i + 2
    elif at(i) == ("p", "(") and at(pairs[i] + 1) == ("p", "=>"):
        body = pairs[i] + 2
    else:
        return False
    if body > last:
        return False
    if at(body) == ("p", "{"):
        return pairs[body] == last
    # A concise body runs to the end; a comma or semicolon at its own depth would start a second
    # expression (`x => 1, run()`), which would be evaluated when the tool is loaded.
    j = body
    while j <= last:
        if j in pairs:
            j = pairs[j] + 1
            continue
        if at(j) in {("p", ","), ("p", ";")}:
            return False
        j += 1
    return True


def _fresh_context() -> quickjs.Context:
    import quickjs  # the engine, at the first check: not when Django starts

    context = quickjs.Context()
    context.set_time_limit(TIME_LIMIT_SECONDS)
    context.set_memory_limit(MEMORY_LIMIT_BYTES)
    context.set_max_stack_size(STACK_LIMIT_BYTES)
    return context


def _engine_message(exc: Exception) -> str:
    return " ".join(str(exc).split("\n    at ")[0].split())[:300]


# Where the engine reports a syntax error: `at <input>:LINE:COLUMN` of the probe script.
_POSITION = re.compile(r"at <input>:(\d+):(\d+)")
# The probe script holds two lines before the first line of `code` (see check_function_expression).
_LINES_BEFORE_CODE = 2


def _position(exc: Exception, code: str) -> str:
    """`line L, column C` of `code` where the engine stopped, or "" when it is outside `code`."""
    match = _POSITION.search(str(exc))
    if match is None:
        return ""
    line = int(match[1]) - _LINES_BEFORE_CODE
    if not 1 <= line <= code.count("\n") + 1:
        return " (at the end of the code)" if line > 0 else ""
    return f" at line {line}, column {match[2]}"


def check_function_expression(code: str) -> None:
    """Raise InvalidCode unless `code` is one JavaScript function expression. Runs none of it."""
    if len(code) > MAX_CODE_LENGTH:
        raise InvalidCode(f"must be at most {MAX_CODE_LENGTH} characters")
    if not code.strip():
        raise InvalidCode("is required")
    import quickjs

    nonce = secrets.token_hex(8)
    sentinel = f"parsed-{nonce}"
    probe = f"__toolCodeProbe_{nonce}"
    declaration = f"function {probe}() {{ return (\n{code}\n); }}"
    context = _fresh_context()
    try:
        context.eval(f'throw "{sentinel}";\n{declaration}')
    except (quickjs.JSException, quickjs.StackOverflow) as exc:
        if not str(exc).startswith(sentinel):
            raise InvalidCode(f"is not valid JavaScript{_position(exc, code)}: {_engine_message(exc)}") from None
    else:  # the first statement always throws; reaching here means the engine did something else
        raise InvalidCode(EXPECTED_FORM)
    try:
        confined = context.eval(f"{probe}.toString()") == declaration
        tokens = _Tokenizer(code).tokens()
        if not confined or not _is_single_function_expression(tokens):
            raise InvalidCode(EXPECTED_FORM)
    except (_Malformed, RecursionError):
        raise InvalidCode(EXPECTED_FORM) from None
    try:
        kind = context.eval(f"typeof {probe}()")
    except (quickjs.JSException, quickjs.StackOverflow) as exc:
        raise InvalidCode(f"{EXPECTED_FORM} ({_engine_message(exc)})") from None
    if kind != "function":
        raise InvalidCode(EXPECTED_FORM)
