"""The `offline` model (docs/api.md, "Models"): built in, deterministic, no network. For demos and tests.

It answers through the same tool loop as every provider, so `make run` shows what a real model
does with nothing installed. Its skills, tried in order on each request:

- after tool results: says what the tools returned (numbered search results: quotes the first,
  citing it `[1]`);
- a tool whose name words appear in the user's message (`current_time` for "what time is it in
  Tokyo?", `word_count` for "how many words are in this sentence?"), or else one whose
  description shares a long word with it ("platform", "documentation"): calls it, its required
  text parameters filled with the text after the message's first colon (or the whole message),
  a timezone parameter with the zone of a city the message names;
- a widget tag whose name the user's message says ("show me a chart" and a `demo.chart` in the
  system prompt's `<tag-instructions>`): the example markup of that tag's instructions, as a model
  following them would write it (the demo shows widgets with no network, docs/widgets.md);
- "…a table…": a Markdown table;
- asked to review a conversation for session insights (docs/api.md, "Session insights": JSON inside `<json>`, then a
  Markdown report): a review from what the transcript shows (how many exchanges, failed answers,
  thanks or complaints);
- otherwise: an echo of the user's message ("You said: …").

Its text streams CHAT_OFFLINE_TOKEN_DELAY_MS apart, so a demo reads like a model's answer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from chatplatform.llm.types import (
    AssistantTurn,
    Completion,
    HistoryMessage,
    ModelRequest,
    ModelResponse,
    Sink,
    ToolCall,
    ToolOutput,
    ToolSpec,
    Usage,
    estimate_tokens,
)
from chatplatform.model_names import ModelRef

ECHO_LIMIT = 280  # characters of the message echoed: it answers demos and tests, not essays
RESULT_LIMIT = 400  # characters of a tool result quoted
_CHUNK = re.compile(r"\S+\s*|\s+")
# Words of a tool's name too common to say the user asked for that tool.
_GENERIC = frozenset({"get", "set", "list", "find", "search", "current", "tool", "the", "and", "for", "run", "make", "new"})


@dataclass(frozen=True)
class Answer:
    text: str
    tool_calls: tuple[ToolCall, ...] = ()


Skill = Callable[[ModelRequest], Answer | None]


def _last_user_text(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if isinstance(message, HistoryMessage) and message.role == "user":
            return " ".join(message.text.split())
    return ""


def _report_tool_results(request: ModelRequest) -> Answer | None:
    outputs: list[ToolOutput] = []
    for message in reversed(request.messages):
        if not isinstance(message, ToolOutput):
            break
        outputs.insert(0, message)
    if not outputs:
        return None
    lines = []
    for output in outputs:
        if output.error:
            lines.append(f"{output.call.name} failed: {_shortened(output.content)}")
        elif found := _NUMBERED.match(output.content):
            lines.append(f"From {found.group(2).strip()}: {_sentence(found.group(3))} [{found.group(1)}]")
        else:  # another agent's answer, or a tool's JSON: its last paragraph is the answer
            lines.append(f"{output.call.name} says: {_shortened(output.content.strip().split(chr(10) * 2)[-1])}")
    return Answer("\n".join(lines))


def _shortened(text: str) -> str:
    """At most RESULT_LIMIT characters, keeping the citation markers (`[1]`) of what is cut."""
    if len(text) <= RESULT_LIMIT:
        return text
    markers = " ".join(dict.fromkeys(re.findall(r"\[\d+\]", text[RESULT_LIMIT - 20 :])))
    return text[: RESULT_LIMIT - 20].rstrip() + "…" + (f" {markers}" if markers else "")


# A knowledge base search result as the model gets it: "[1] Title\ntext…".
_NUMBERED = re.compile(r"\[(\d+)\] ([^\n]*)\n(.+?)(?:\n\n\[\d+\] |\Z)", re.DOTALL)


def _sentence(text: str) -> str:
    """The first sentence or so of a result, on one line."""
    flat = " ".join(text.split())
    end = flat.find(". ", 40)
    flat = flat[: end + 1] if 0 < end < RESULT_LIMIT else flat
    return flat if len(flat) <= RESULT_LIMIT else flat[: RESULT_LIMIT - 1] + "…"


def _name_words(name: str) -> set[str]:
    return {word for word in re.split(r"[_\W]+", name.lower()) if len(word) >= 3 and word not in _GENERIC}


@functools.cache
def _zones_by_city() -> dict[str, str]:
    """'tokyo' → 'Asia/Tokyo', 'new york' → 'America/New_York', from the system's zone names."""
    return {zone.rsplit("/", 1)[-1].replace("_", " ").lower(): zone for zone in zoneinfo.available_timezones() if "/" in zone}


def _zone_named_in(message: str) -> str | None:
    words = re.findall(r"[A-Za-z]+", message.lower())
    for size in (3, 2, 1):  # "new york" before "york"
        for start in range(len(words) - size + 1):
            if zone := _zones_by_city().get(" ".join(words[start : start + size])):
                return zone
    return None


def _arguments(spec: ToolSpec, message: str) -> dict[str, str] | None:
    """Required text parameters filled from the message, a timezone from a city it names; None
    when a required parameter is of another kind."""
    schema = spec.parameters_json_schema
    properties = schema.get("properties") or {}
    _, colon, after = message.partition(":")
    text = after.strip() if colon and after.strip() else message
    arguments = {}
    for name, definition in properties.items():
        if "timezone" in name.lower() + str((definition or {}).get("description", "")).lower() and (zone := _zone_named_in(message)):
            arguments[name] = zone
    for name in schema.get("required") or ():
        if name in arguments:
            continue
        if (properties.get(name) or {}).get("type") != "string":
            return None
        arguments[name] = text
    return arguments


def _call_a_named_tool(request: ModelRequest) -> Answer | None:
    if not request.tools or not isinstance(request.messages[-1], HistoryMessage):
        return None
    message = _last_user_text(request)
    words = set(re.findall(r"\w+", message.lower()))
    words |= {word[:-1] for word in words if word.endswith("s")}  # "words" asks for word_count
    long_words = {word for word in words if len(word) >= 6}
    named = [spec for spec in request.tools if _name_words(spec.name) & words]
    described = [spec for spec in request.tools if long_words & set(re.findall(r"\w+", spec.description.lower()))]
    for spec in named + described:
        if (arguments := _arguments(spec, message)) is not None:
            call = ToolCall(f"offline-call-{len(request.messages)}-{request.tools.index(spec)}", spec.name, json.dumps(arguments))
            return Answer(f"Let me use {spec.name}.", (call,))
    return None


_TAG_INSTRUCTIONS = re.compile(r'<tag-instructions type="([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)">\n(.*?)\n</tag-instructions>', re.DOTALL)


def _example_of(scope: str, tag: str, instructions: str) -> str | None:
    """The first complete `<scope.tag …>…</scope.tag>` (or self-closing) markup the instructions show."""
    name = re.escape(f"{scope}.{tag}")
    found = re.search(rf"<{name}(?:\s[^<>]*)?(?:/>|>.*?</{name}>)", instructions, re.DOTALL)
    return found.group(0) if found else None


def _show_a_widget(request: ModelRequest) -> Answer | None:
    if not isinstance(request.messages[-1], HistoryMessage):
        return None
    words = set(re.findall(r"\w+", _last_user_text(request).lower()))
    words |= {word[:-1] for word in words if word.endswith("s")}  # "charts" asks for a chart
    examples = []
    for scope, tag, instructions in _TAG_INSTRUCTIONS.findall(request.system_prompt):
        if _name_words(tag) & words and (example := _example_of(scope, tag, instructions)):
            examples.append(example)
    if not examples:
        return None
    return Answer("Here you are:\n\n" + "\n\n".join(examples))


_PLANETS = (("Mercury", "57.9", "88 days"), ("Venus", "108.2", "225 days"), ("Earth", "149.6", "365 days"))


def _table(request: ModelRequest) -> Answer | None:
    message = _last_user_text(request)
    if not isinstance(request.messages[-1], HistoryMessage) or "table" not in message.lower():
        return None
    if "planet" in message.lower():
        rows = [f"| {name} | {distance} | {year} |" for name, distance, year in _PLANETS]
        return Answer(
            "Here are three planets:\n\n| Planet | Distance from the Sun (million km) | Year |\n|---|---:|---|\n" + "\n".join(rows)
        )
    words = message.split()[:10]
    rows = [f"| {number} | {word} | {len(word)} |" for number, word in enumerate(words, start=1)]
    return Answer("The words of your message:\n\n| # | Word | Letters |\n|---:|---|---:|\n" + "\n".join(rows))


def _echo(request: ModelRequest) -> Answer:
    text = _last_user_text(request)
    if len(text) > ECHO_LIMIT:
        text = text[: ECHO_LIMIT - 1] + "…"
    return Answer(f"You said: {text}" if text else "You said nothing.")


_MESSAGE = re.compile(r'<message role="(user|assistant)">\n(.*?)\n</message>', re.DOTALL)
_PLEASED = re.compile(r"\b(thanks?|thank you|great|perfect|helpful)\b", re.IGNORECASE)
_DISPLEASED = re.compile(r"\b(wrong|useless|bad|angry|not what|doesn't work|does not work)\b", re.IGNORECASE)


def _review_session(request: ModelRequest) -> Answer | None:
    """A session review (the insights step), judged from the transcript alone."""
    if "<json>" not in request.system_prompt or "goalAchievement" not in request.system_prompt:
        return None
    messages = _MESSAGE.findall(_last_user_text_raw(request))
    asked = [text for role, text in messages if role == "user"]
    answered = [text for role, text in messages if role == "assistant" and text.strip() and not text.startswith("(no answer")]
    said = " ".join(asked)
    sentiment = "negative" if _DISPLEASED.search(said) else "positive" if _PLEASED.search(said) else "neutral"
    done = len(answered) >= len(asked) > 0
    goal = 8 if done else 4 if answered else 1
    satisfaction = {"positive": 9, "neutral": 6, "negative": 2}[sentiment]

    def score(value: int, description: str) -> dict[str, object]:
        return {"score": value, "description": description}

    exchanges = f"{len(asked)} question(s), {len(answered)} answer(s)"
    review = {
        "scores": {
            "goalAchievement": score(goal, f"{exchanges}."),
            "userSatisfaction": score(satisfaction, f"The user's words read as {sentiment}."),
            "aiPerformance": {
                "accuracy": score(goal, "Judged offline from the transcript, not from facts."),
                "helpfulness": score(goal, "Every question got an answer." if done else "Some questions got no answer."),
                "communication": score(7, "Short, direct answers."),
                "efficiency": score(8 if len(asked) <= 3 else 6, exchanges),
                "overall": score((goal + satisfaction) // 2, "Offline review."),
            },
            "interactionQuality": score((goal + satisfaction) // 2, exchanges),
        },
        "assessments": {
            "userSentiment": sentiment,
            "goalCompletionStatus": "completed" if done else "partially_completed" if answered else "not_completed",
            "satisfactionLevel": {"positive": "satisfied", "neutral": "neutral", "negative": "dissatisfied"}[sentiment],
            "requiresFollowup": not done,
            "criticalIssuesPresent": not answered,
            "escalationNeeded": sentiment == "negative" and not done,
        },
        "metrics": {
            "sessionDurationEstimate": "short" if len(asked) <= 3 else "medium" if len(asked) <= 10 else "long",
            "complexityLevel": "low" if len(asked) <= 3 else "medium",
            "userEffortRequired": "low" if done else "medium",
            "aiConfidenceLevel": "low",
        },
    }
    report = (
        f"## Offline review\n\n- {exchanges}; the user's tone reads as {sentiment}.\n"
        f"- {'Every question was answered.' if done else 'Not every question was answered.'}\n"
        "- The offline model judged the transcript's shape only: set CHAT_INSIGHTS_MODEL for a real review."
    )
    return Answer(f"<json>{json.dumps(review)}</json>\n\n{report}")


def _last_user_text_raw(request: ModelRequest) -> str:
    for message in reversed(request.messages):
        if isinstance(message, HistoryMessage) and message.role == "user":
            return message.text
    return ""


SKILLS: list[Skill] = [_review_session, _report_tool_results, _show_a_widget, _call_a_named_tool, _table]


def answer(request: ModelRequest) -> Answer:
    for skill in SKILLS:
        if (found := skill(request)) is not None:
            return found
    return _echo(request)


def _usage(request: ModelRequest, text: str) -> Usage:
    prompt = request.system_prompt
    for message in request.messages:
        prompt += message.content if isinstance(message, ToolOutput) else message.text
        if isinstance(message, AssistantTurn):
            prompt += "".join(call.arguments for call in message.tool_calls)
    return Usage(estimate_tokens(prompt), estimate_tokens(text), 1)


async def stream(ref: ModelRef, request: ModelRequest, sink: Sink) -> ModelResponse:
    found = answer(request)
    delay = settings.CHAT_OFFLINE_TOKEN_DELAY_MS / 1000
    for number, chunk in enumerate(_CHUNK.findall(found.text)):
        if delay and number:
            await asyncio.sleep(delay)
        sink.text(chunk)
    return ModelResponse(found.text, found.tool_calls, _usage(request, found.text))


async def complete(ref: ModelRef, request: ModelRequest) -> Completion:
    found = answer(request)
    return Completion(found.text, _usage(request, found.text))
