"""The one place a turn is orchestrated (issue 4; CONTRACT §7). REST, SSE and WebSocket all start turns here.

    await run_turn(body, caller) → Turn of TurnEvents: session, delta…, trace… (traces feature), done, title?  |  error
    start(prepare(body, caller))  the same in two steps: `prepare` is sync, for callers that do
                                  more on the database thread in the same trip (chat.endpoint, the consumer)

Checks (validation, chat app, agent, session, userId rule, access and rollout) run before the
first event: a failure there is raised as the API error it is (400/403/404), so the JSON and SSE
views answer it with its HTTP status. From then on the turn runs in a task of its own that
outlives the caller: a client that disconnects mid-stream stops receiving events, but the turn
still finishes and stores its answer. Its events reach the caller through the Turn (`batch`).

The non-streaming answer is the `done` event's fields (`collect`), the SSE stream `sse_chunks`.
The `title` of a new session comes after `done` (never delaying the answer): streams receive it as
a last event before they close.

Database work runs on a small thread pool of its own (one thread on SQLite, which has one writer
anyway) (`on_db_thread`); no transaction is open while a model is called.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.conf import settings
from rest_framework import exceptions

from agents.access import agent_access
from agents.prompts import render_system_prompt
from agents.selectors import agent_get
from chat import selectors, services
from chat.features import KNOWN_FEATURES, resolve_features
from chat.models import ChatUser
from chat.serializers import ChatUserSerializer, ConverseRequestSerializer
from chatplatform import llm
from chatplatform.api.errors import ApiError, Code, PermissionDenied
from chatplatform.api.exceptions import handle
from chatplatform.api.permissions import is_admin
from chatplatform.db import on_db_thread
from directives.selection import select
from directives.selectors import directives_candidates
from tags.selectors import instructions_for, tags_for_tools
from tools.selectors import tools_by_ids
from tools.toolset import ToolTrace, build_toolset, resolved_tool_ids

logger = logging.getLogger(__name__)

TITLE_TIMEOUT_SECONDS = 15.0
VERIFICATION_TIMEOUT_SECONDS = 30.0
CORRECTIONS_HEADING = "\n\n## Corrections\n\n"
GRADES = ("A", "B", "C", "F")  # best to worst; a reprompt happens at or beyond the threshold

# Strong references to running turns: the event loop keeps only weak ones.
_running: set[asyncio.Task[None]] = set()


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """One event of a turn: `type` (session, delta, trace, done, title, error) and its fields.

    `status` is the HTTP status an `error` stands for (the JSON view answers with it).
    """

    type: str
    data: dict[str, Any]
    status: int = 200


def error_event(exc: Exception) -> TurnEvent:
    """Any exception as the `error` event: SPEC.md's envelope, rendered by the one exception handler."""
    response = handle(exc)
    return TurnEvent("error", dict(response.data), response.status_code)


# --- Checks and everything read before the turn starts --------------------------------------------


@dataclass
class _Prepared:
    user: ChatUser
    user_fields: dict[str, Any]  # as access rules and prompts see them
    chat_app_id: str
    agent_id: str
    session_id: uuid.UUID | None
    message: str
    files: list[Any]
    invocation_mode: str | None
    source: str
    entity_id: str | None
    features: dict[str, Any]
    system_prompt: str
    candidates: list[Any]
    model: str
    verification_model: str
    tool_ids: list[str]  # the agent's, toolOverrides applied
    tools: dict[str, Any]  # their ToolDefinitions, read with the rest
    timezone: str | None
    tool_tags: frozenset[str]  # `scope.tag` a tool may emit in this chat app (issue 5)


def user_fields(user: ChatUser) -> dict[str, Any]:
    """A user's wire fields, as prompts and access conditions see them (docs/access-rules.md)."""
    return dict(ChatUserSerializer(user).data)


def narrow_features(resolved: dict[str, Any], requested: dict[str, Any]) -> dict[str, Any]:
    """CONTRACT §6: a request can switch a resolved feature off (`enabled: false`), never on;
    its other keys are ignored, so it cannot widen a tag list or lower a reprompt threshold."""
    for name in KNOWN_FEATURES:
        asked = requested.get(name)
        if isinstance(asked, dict) and asked.get("enabled") is False and isinstance(resolved.get(name), dict):
            resolved[name] = {**resolved[name], "enabled": False}
    return resolved


def _on(features: dict[str, Any], name: str) -> bool:
    feature = features.get(name)
    return isinstance(feature, dict) and feature.get("enabled") is True


def _entity_value(features: dict[str, Any], custom_data: dict[str, Any]) -> str | None:
    """SPEC.md directive rule 2: the user's custom-data field named by `entity.attributeName`."""
    if not _on(features, "entity"):
        return None
    value = custom_data.get(features["entity"].get("attributeName") or "")
    if value is None or isinstance(value, dict | list | bool) or str(value) == "":
        return None
    return str(value)


def _prepare(body: dict[str, Any], caller: ChatUser) -> _Prepared:
    requested_user = body.get("userId") or caller.pk
    if requested_user != caller.pk and not is_admin(caller):
        raise PermissionDenied("insufficient permissions: userId must be your own")
    user = caller if requested_user == caller.pk else services.user_get_or_create(user_id=requested_user)
    definition = selectors.turn_definitions.reader()
    app = definition(("chat-app", body["chatAppId"]), lambda: selectors.chat_app_get(chat_app_id=body["chatAppId"]))
    if not selectors.chat_app_usable_by(app, user):
        reason = "is disabled" if not app.enabled else "is not available to you"
        raise PermissionDenied(f"insufficient permissions: chat app {app.pk} {reason}")
    agent = definition(("agent", body["agentId"]), lambda: agent_get(agent_id=body["agentId"]))
    # Checked where the turn takes its ticket: another user's or chat app's session is a 404 there.
    session_id = selectors.session_uuid(body["sessionId"]) if body.get("sessionId") else None
    fields = user_fields(user)
    decision = agent_access(access_rules=agent.access_rules, rollout_policy=agent.rollout_policy, user=fields)
    if not decision.allowed:
        raise PermissionDenied(decision.reason)
    tool_ids = resolved_tool_ids(agent.tool_ids or [], (agent.rollout_policy or {}).get("toolOverrides"))
    site = settings.CHAT_SITE_FEATURES
    features = narrow_features(resolve_features(site=site, app=app.features or {}), body["features"])
    tag_text, tool_tags = "", frozenset[str]()
    if _on(features, "tags"):
        tag_text = instructions_for(site_features=site, app_features=app.features or {})
        tool_tags = tags_for_tools(site_features=site, app_features=app.features or {})
    system_prompt = render_system_prompt(
        base_prompt=agent.base_prompt, user=fields, company_name=settings.CHAT_COMPANY_NAME, tag_instructions=tag_text
    )
    entity = _entity_value(features, fields["customData"])
    candidates: list[Any] = []
    if _on(features, "instructionAugmentation"):
        candidates = directives_candidates(chat_app_id=app.pk, agent_id=agent.pk, tool_ids=list(agent.tool_ids or []), entity_value=entity)
    return _Prepared(
        user=user,
        user_fields=fields,
        chat_app_id=app.pk,
        agent_id=agent.pk,
        session_id=session_id,
        message=body["message"],
        files=body.get("files") or [],
        invocation_mode=body.get("invocationMode"),
        source=body["source"],
        entity_id=entity,
        features=features,
        system_prompt=system_prompt,
        candidates=candidates,
        model=agent.foundation_model or settings.CHAT_DEFAULT_MODEL,
        verification_model=agent.verification_foundation_model or settings.CHAT_VERIFICATION_MODEL,
        tool_ids=tool_ids,
        tools=definition(("tools", *tool_ids), lambda: tools_by_ids(tool_ids)),
        timezone=body.get("timezone"),
        tool_tags=tool_tags,
    )


# --- Usage and traces ------------------------------------------------------------------------------


@dataclass
class _Ledger:
    """Every model call of a turn: summed into the message's usage, listed in its traces."""

    calls: list[tuple[str, llm.Usage]] = field(default_factory=list)
    traces: list[dict[str, Any]] = field(default_factory=list)

    def add(self, stage: str, model: str, usage: llm.Usage, duration_ms: int, **details: Any) -> dict[str, Any]:
        self.calls.append((model, usage))
        trace = {
            "stage": stage,
            "model": model,
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "durationMs": duration_ms,
            **details,
        }
        self.traces.append(trace)
        return trace

    def usage(self) -> dict[str, Any]:
        return usage_fields(self.calls)


def usage_fields(calls: list[tuple[str, llm.Usage]]) -> dict[str, Any]:
    """ChatMessageUsage of these calls, each priced with its own model's CHAT_MODEL_PRICES entry."""
    input_tokens = sum(usage.input_tokens for _, usage in calls)
    output_tokens = sum(usage.output_tokens for _, usage in calls)
    costs = [llm.cost(model, usage, settings.CHAT_MODEL_PRICES) for model, usage in calls]
    input_cost = round(sum(c.input_cost for c in costs), 10)
    output_cost = round(sum(c.output_cost for c in costs), 10)
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
        "inputCost": input_cost,
        "outputCost": output_cost,
        "totalCost": round(input_cost + output_cost, 10),
    }


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


# --- The turn ------------------------------------------------------------------------------------


Emit = Callable[[TurnEvent | None], None]


async def _stream(
    emit: Emit, *, model: str, system_prompt: str, history: list[llm.HistoryMessage], message: str, tools: list[llm.ToolSpec]
) -> tuple[str, llm.Usage, str]:
    """One streamed model reply, each delta emitted as it arrives; (text, usage, canonical model)."""

    def delta(text: str) -> None:
        emit(TurnEvent("delta", {"text": text}))

    events = llm.stream_reply(
        model=model,
        system_prompt=system_prompt,
        history=history,
        message=message,
        tools=tools or None,
        max_round_trips=settings.CHAT_TOOL_MAX_ROUND_TRIPS,
        on_text=delta,
    )
    async for event in events:
        if isinstance(event, llm.ReplyDone):
            return event.text, event.usage, event.model
    raise llm.ModelError(f"{model}: the reply ended without finishing")


def _with_directives(system_prompt: str, chosen: list[Any]) -> str:
    block = "\n\n".join(directive.instructions for directive in chosen)
    return f"{system_prompt}\n\n<additional-instructions>\n{block}\n</additional-instructions>"


_GRADE = re.compile(r"<grade>\s*([ABCF])\s*</grade>", re.IGNORECASE)
_FEEDBACK = re.compile(r"<feedback>(.*?)</feedback>", re.DOTALL | re.IGNORECASE)
VERIFICATION_PROMPT = (
    "You review an assistant's answer to a user's question. Grade it: A (correct and complete), "
    "B (minor issues), C (significant errors or omissions), F (wrong, off-topic or harmful). "
    "Reply with the grade inside <grade></grade>, then what should be corrected inside <feedback></feedback>."
)


def parse_grade(text: str) -> tuple[str | None, str]:
    grade = _GRADE.search(text)
    feedback = _FEEDBACK.search(text)
    return (grade.group(1).upper() if grade else None), (feedback.group(1).strip() if feedback else "")


async def _verify(
    emit: Emit, prep: _Prepared, ledger: _Ledger, history: list[llm.HistoryMessage], answer: str, tools: list[llm.ToolSpec]
) -> tuple[str, list]:
    """verifyResponse: grade the answer; at or beyond the threshold ask once more and append the correction."""
    started = time.perf_counter()
    try:
        graded = await llm.complete(
            model=prep.verification_model,
            system_prompt=VERIFICATION_PROMPT,
            prompt=f"Question:\n{prep.message}\n\nAnswer:\n{answer}",
            timeout=VERIFICATION_TIMEOUT_SECONDS,
        )
    except llm.ModelError as exc:
        trace = {"stage": "verification", "model": prep.verification_model, "durationMs": _ms(started), "error": str(exc)}
        ledger.traces.append(trace)
        _trace(emit, prep, trace)
        return answer, [{"grade": None, "model": prep.verification_model, "error": str(exc)}]
    grade, feedback = parse_grade(graded.text)
    threshold = (prep.features.get("verifyResponse") or {}).get("autoRepromptThreshold")
    reprompt = grade is not None and threshold in GRADES and GRADES.index(grade) >= GRADES.index(threshold)
    _trace(emit, prep, ledger.add("verification", prep.verification_model, graded.usage, _ms(started), grade=grade))
    verification: dict[str, Any] = {"grade": grade, "model": prep.verification_model, "feedback": feedback, "reprompted": reprompt}
    if not reprompt:
        return answer, [verification]
    started = time.perf_counter()
    emit(TurnEvent("delta", {"text": CORRECTIONS_HEADING}))
    correction = (
        f"A reviewer graded your previous answer {grade}."
        + (f" The reviewer says: {feedback}" if feedback else "")
        + "\nAnswer my previous question again, correctly. Give only the corrected answer."
    )
    text, usage, model = await _stream(
        emit,
        model=prep.model,
        system_prompt=prep.system_prompt,
        history=[*history, llm.HistoryMessage("user", prep.message), llm.HistoryMessage("assistant", answer)],
        message=correction,
        tools=tools,
    )
    _trace(emit, prep, ledger.add("reprompt", model, usage, _ms(started)))
    return f"{answer}{CORRECTIONS_HEADING}{text}", [verification]


def _toolset(prep: _Prepared, session_id: Any, ledger: _Ledger, emit: Emit) -> list[llm.ToolSpec]:
    """The agent's tools this user may use (issue 5), each call recorded in the message's traces
    and streamed as a `trace` event when the traces feature is on."""

    def on_trace(trace: ToolTrace) -> None:
        wire = trace.as_wire()
        ledger.traces.append(wire)
        _trace(emit, prep, wire)

    toolset = build_toolset(
        prep.tools,
        prep.tool_ids,
        user=prep.user_fields,
        event_base={
            "userId": prep.user.pk,
            "sessionId": str(session_id),
            "chatAppId": prep.chat_app_id,
            "agentId": prep.agent_id,
            "customData": dict(prep.user.custom_data or {}),
            "timezone": prep.timezone,
        },
        on_trace=on_trace,
        allowed_tags=prep.tool_tags,
    )
    return toolset.specs


def _trace(emit: Emit, prep: _Prepared, trace: dict[str, Any]) -> None:
    if _on(prep.features, "traces"):
        emit(TurnEvent("trace", dict(trace)))


def _start(body: dict[str, Any], caller: ChatUser) -> tuple[_Prepared, services.TurnClaim]:
    """The checks, everything the turn reads, and its place on the session: one trip to the database thread."""
    prep = _prepare(body, caller)
    claim = services.turn_claim(
        session_id=prep.session_id,
        user=prep.user,
        chat_app_id=prep.chat_app_id,
        agent_id=prep.agent_id,
        message=prep.message,
        files=prep.files,
        invocation_mode=prep.invocation_mode,
        source=prep.source,
        entity_id=prep.entity_id,
    )
    return prep, claim


async def _wait_for_turn(prep: _Prepared, claim: services.TurnClaim) -> services.TurnClaim:
    """The claim once this turn may start: earlier turns of the session have finished."""
    delay = 0.01
    while claim.user_message is None:
        # Another turn of this session runs (possibly in another process): poll its hand-over.
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.25)
        claim = await on_db_thread(services.turn_try_start)(claim=claim, message=prep.message, files=prep.files) or claim
    return claim


async def _execute(prep: _Prepared, claim: services.TurnClaim, emit: Emit) -> None:
    finished = False
    try:
        claim = await _wait_for_turn(prep, claim)
        assert claim.user_message is not None
        started = time.perf_counter()
        session_id = claim.session_id
        emit(TurnEvent("session", {"sessionId": str(session_id), "userMessageId": str(claim.user_message.pk)}))
        history = [llm.HistoryMessage("user" if source == "user" else "assistant", text) for source, text in claim.history]
        ledger = _Ledger()
        system_prompt = prep.system_prompt
        if prep.candidates:
            selection = await select(
                candidates=prep.candidates,
                query=prep.message,
                model=settings.CHAT_SELECTION_MODEL,
                timeout=settings.CHAT_SELECTION_TIMEOUT_SECONDS,
            )
            details: dict[str, Any] = {
                "candidates": [d.directive_id for d in prep.candidates],
                "chosen": [d.directive_id for d in selection.chosen],
            }
            if selection.error:
                details["error"] = selection.error
            _trace(emit, prep, ledger.add("selection", selection.model, selection.usage, selection.duration_ms, **details))
            if selection.chosen:
                system_prompt = _with_directives(system_prompt, selection.chosen)
                prep.system_prompt = system_prompt  # a reprompt keeps the chosen directives
        tools = _toolset(prep, session_id, ledger, emit)
        model_started = time.perf_counter()
        text, usage, model = await _stream(
            emit, model=prep.model, system_prompt=system_prompt, history=history, message=prep.message, tools=tools
        )
        _trace(emit, prep, ledger.add("model", model, usage, _ms(model_started)))
        verifications: list[dict[str, Any]] = []
        if _on(prep.features, "verifyResponse"):
            text, verifications = await _verify(emit, prep, ledger, history, text, tools)
        message_usage = ledger.usage()
        # A title that costs no model call is stored with the answer; a model's comes after `done`.
        title = fallback_title(prep.message) if not claim.title and settings.CHAT_TITLE_MODEL == "offline" else None
        answer, titled = await on_db_thread(services.turn_finish)(
            session_id=session_id,
            ticket=claim.ticket,
            user_id=prep.user.pk,
            text=text,
            model=model,
            usage=message_usage,
            traces=ledger.traces,
            verifications=verifications,
            execution_duration=_ms(started),
            title=title,
        )
        finished = True
        emit(
            TurnEvent(
                "done",
                {"success": True, "response": text, "sessionId": str(session_id), "messageId": str(answer.pk), "usage": message_usage},
            )
        )
        if title is None and not claim.title:
            title = await _title(session_id=session_id, question=prep.message, answer=text)
            titled = title is not None
        if titled:
            emit(TurnEvent("title", {"sessionId": str(session_id), "title": title}))
    except llm.ModelError as exc:
        logger.warning("turn failed: %s", exc)
        emit(error_event(ApiError(f"the model provider failed: {exc}", code=Code.INTERNAL_ERROR, status_code=502)))
    except (ApiError, exceptions.APIException) as exc:
        emit(error_event(exc))
    except Exception as exc:
        logger.exception("turn failed")
        emit(error_event(exc))
    finally:
        if claim.user_message is not None and not finished:
            await asyncio.shield(on_db_thread(services.turn_release)(session_id=claim.session_id, ticket=claim.ticket))
        emit(None)


# --- Titles ----------------------------------------------------------------------------------------

TITLE_PROMPT = (
    "Write a title of 3 to 8 words for a conversation that starts with the exchange below. "
    "Answer with the title only: no quotes, no punctuation at the end."
)


def fallback_title(question: str) -> str:
    words = question.split()
    return " ".join(words[:8])[:200]


def clean_title(text: str, question: str) -> str:
    """The model's title on one line, without quotes or Markdown, at most 8 words; the question's
    first words when the model gave nothing usable."""
    line = next((line for line in text.strip().splitlines() if line.strip()), "")
    line = re.sub(r"^(title\s*:\s*)", "", line.strip().strip("#*").strip(), flags=re.IGNORECASE)
    words = line.strip("\"'“”` ").rstrip(".!").split()
    return " ".join(words[:8])[:200] if words else fallback_title(question)


async def generate_title(*, question: str, answer: str) -> tuple[str, dict[str, Any]]:
    """A 3–8 word title from the first exchange with CHAT_TITLE_MODEL, and its usage.

    The offline model only echoes, so with it the title is the question's first words.
    """
    model = settings.CHAT_TITLE_MODEL
    if model == "offline":
        return fallback_title(question), usage_fields([])
    completion = await llm.complete(
        model=model, system_prompt=TITLE_PROMPT, prompt=f"Question: {question}\n\nAnswer: {answer[:4000]}", timeout=TITLE_TIMEOUT_SECONDS
    )
    return clean_title(completion.text, question), usage_fields([(model, completion.usage)])


async def _title(*, session_id: uuid.UUID, question: str, answer: str) -> str | None:
    """Title an untitled session after its first answer; a title the user set meanwhile wins."""
    try:
        title, usage = await generate_title(question=question, answer=answer)
    except llm.ModelError as exc:
        logger.info("no title for session %s: %s", session_id, exc)
        title, usage = fallback_title(question), usage_fields([])
    if not title:
        return None
    written = await on_db_thread(services.session_set_title)(session_id=session_id, title=title, only_if_untitled=True)
    if usage["totalTokens"]:
        await on_db_thread(services.session_add_usage)(session_id=session_id, usage=usage)
    return title if written else None


# --- Entry point -----------------------------------------------------------------------------------


_request_checkers = threading.local()


def validate_request(body: Any) -> dict[str, Any]:
    """The converse body checked (400 naming the field and the rule).

    Each thread keeps one serializer and runs its validation (what `is_valid` runs, raising the
    same errors): a new serializer deep-copies its declared fields, a quarter of a turn's start."""
    serializer = getattr(_request_checkers, "serializer", None)
    if serializer is None:
        serializer = _request_checkers.serializer = ConverseRequestSerializer()
    return dict(serializer.run_validation(body))


class Turn:
    """The events of a started turn, in order: iterate them one by one, or take what is waiting with `batch`.

    Events are handed over without a queue or a timer per event: `emit` appends and wakes the one
    reader. A streamed token costs the platform about as much CPU as the rest of its path to the
    client, so this hand-over is kept to a list append and, when the reader waits, one future.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._events: list[TurnEvent] = []
        self._ended = False  # the turn emitted its end (None)
        self._over = False  # the reader has taken the last event, or left
        self._waiter: asyncio.Future[None] | None = None
        self._last_emit = self._loop.time()
        self._quiet = False  # the reader asked to hear of quiet spells, and one came
        self._quiet_timer: asyncio.TimerHandle | None = None

    def emit(self, event: TurnEvent | None) -> None:
        if self._over:  # nobody reads any more
            return
        if event is None:
            self._ended = True
        else:
            self._events.append(event)
        self._last_emit = self._loop.time()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        """The reader leaves (its client went away): later events are dropped, a waiting `batch` returns None.
        The turn itself goes on and stores its answer."""
        self._over, self._events = True, []
        if self._quiet_timer is not None:
            self._quiet_timer.cancel()
        self._wake()

    def __aiter__(self) -> AsyncIterator[TurnEvent]:
        return self._each()

    async def _each(self) -> AsyncIterator[TurnEvent]:
        try:
            while (events := await self.batch()) is not None:
                for event in events:
                    yield event
        finally:
            self.close()

    async def batch(self, quiet_after: float | None = None) -> list[TurnEvent] | None:
        """Every event waiting now, waiting for the first if there is none; None once the turn is over.

        With `quiet_after`: [] whenever the turn has been quiet that long (a stream's heartbeat),
        checked by one timer for the whole turn, not one per wait. A stream writes a batch at
        once: one write, not one per delta.
        """
        if quiet_after is not None and self._quiet_timer is None and not (self._ended or self._over):
            self._quiet_timer = self._loop.call_at(self._last_emit + quiet_after, self._quiet_check, quiet_after)
        while not self._events and not self._ended and not self._over:
            if self._quiet:
                self._quiet = False
                return []
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._over:
            return None
        events, self._events, self._quiet = self._events, [], False
        if self._ended:
            self._over = True
            if self._quiet_timer is not None:
                self._quiet_timer.cancel()
        return events or None

    def _quiet_check(self, quiet_after: float) -> None:
        if self._ended or self._over:
            return
        now = self._loop.time()
        if now - self._last_emit >= quiet_after:
            self._quiet, self._last_emit = True, now
            self._wake()
        self._quiet_timer = self._loop.call_at(self._last_emit + quiet_after, self._quiet_check, quiet_after)


SSE_HEARTBEAT_SECONDS = 15.0  # CONTRACT §7


def sse_event(event: TurnEvent) -> bytes:
    # orjson: a tenth of json's CPU per delta (UTF-8 out, not \u escapes; the same JSON values).
    return b"event: " + event.type.encode() + b"\ndata: " + orjson.dumps(event.data) + b"\n\n"


async def sse_chunks(turn: Turn) -> AsyncIterator[bytes]:
    """The turn as Server-Sent Events: what is waiting in one chunk, a heartbeat comment when quiet."""
    try:
        while (events := await turn.batch(SSE_HEARTBEAT_SECONDS)) is not None:
            # An empty batch: quiet for a while (a long tool call); the comment keeps proxies from closing the stream.
            yield b"".join(map(sse_event, events)) if events else b": heartbeat\n\n"
    finally:
        turn.close()  # leaving early (the client went away) only stops the writing: the turn runs on


async def collect(turn: Turn) -> dict[str, Any]:
    """The non-streaming answer: the `done` event's fields; an `error` event is raised as the API error."""
    async for event in turn:
        if event.type == "done":
            return event.data  # leaving now: a pending title is still stored
        if event.type == "error":
            raise ApiError(event.data["error"], code=event.data.get("code"), status_code=event.status)
    raise ApiError("the turn ended without an answer", code=Code.INTERNAL_ERROR, status_code=500)


@dataclass(frozen=True)
class Started:
    """A turn whose checks passed, whose definitions are read and whose place on the session is taken."""

    prep: _Prepared
    claim: services.TurnClaim


def prepare(body: Any, caller: ChatUser) -> Started:
    """The request checked (400 naming the field and the rule; 403/404 of CONTRACT §3, §5), what
    the turn needs read, and its ticket on the session taken. Sync: run it on the database thread."""
    return Started(*_start(validate_request(body), caller))


def start(started: Started) -> Turn:
    """Run a prepared turn in a task of its own; its events come from the returned Turn.

    Leaving the events early (a disconnect) does not stop the turn: it runs to the end and stores
    the answer.
    """
    turn = Turn()
    task = asyncio.create_task(_execute(started.prep, started.claim, turn.emit), name="converse-turn")
    _running.add(task)
    task.add_done_callback(_running.discard)
    return turn


async def run_turn(body: Any, caller: ChatUser) -> Turn:
    """Check the request and start the turn (check failures raise here, as the API error they are;
    later failures are an `error` event)."""
    return start(await on_db_thread(prepare)(body, caller))


async def wait_for_running_turns() -> None:
    """Wait until every turn started in this process has finished (tests, graceful shutdown)."""
    while _running:
        await asyncio.gather(*list(_running), return_exceptions=True)
