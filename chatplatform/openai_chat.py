"""`openai:` models (CONTRACT §7): OpenAI's Chat Completions, or any server at OPENAI_BASE_URL that speaks it.

This is the one provider `chatplatform.llm` does not reach through pydantic-ai. Measured on the
converse benchmark (bench/converse.py, 50 streamed tokens), the OpenAI SDK under pydantic-ai's
agent graph cost 50+ ms of CPU per turn: the SDK builds a pydantic model of every chunk and each
event climbs about ten layers of async generators. The whole turn's budget is 5 ms (issue 4), so
this module posts the request through `chatplatform.http_client` (an asyncio protocol over the
httptools parser: ~18 µs per streamed chunk against ~70 µs with aiohttp, measured), decodes each
Server-Sent Events line with `json`, and runs the tool loop itself, under the same contract as the
pydantic-ai path (`llm.ReplyBuilder`, `llm.run_tool`): tool failures are results the model reads,
the calls of one response run concurrently, and the loop stops after `max_round_trips` requests.

Retries follow the OpenAI SDK's rules, so a server tuned for it behaves the same: 408, 409, 429
and 5xx are retried twice before any byte of the answer arrived, after `retry-after-ms`,
`retry-after` or an exponential backoff; `x-should-retry` overrides the status.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson

from chatplatform import http_client, llm

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_RETRIES = 2  # the OpenAI SDK's default
# The OpenAI SDK's defaults: five seconds to connect, ten minutes of silence at most. No limit on
# a whole answer: a long stream that keeps coming is not stuck.
TIMEOUTS = http_client.Timeouts(connect=5.0, idle_read=600.0)
_RETRY_STATUSES = frozenset({408, 409, 429})


def _compact_json(value: Any) -> bytes:
    return orjson.dumps(value)


@dataclass(frozen=True)
class _Endpoint:
    url: str
    headers: dict[str, str]


def _endpoint(model: str) -> _Endpoint:
    """The Chat Completions URL and headers, from OPENAI_BASE_URL and OPENAI_API_KEY (read per call: tests change them)."""
    base_url = os.environ.get("OPENAI_BASE_URL") or None
    api_key = os.environ.get("OPENAI_API_KEY") or None
    if api_key is None:
        if base_url is None:
            raise llm.ModelError(f"{model}: set OPENAI_API_KEY, or OPENAI_BASE_URL for a compatible server that needs no key")
        api_key = llm.PLACEHOLDER_API_KEY
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json", "Accept": "application/json"}
    return _Endpoint(f"{(base_url or DEFAULT_BASE_URL).rstrip('/')}/chat/completions", headers)


# --- Requests ------------------------------------------------------------------------------------


def _should_retry(response: http_client.Response) -> bool:
    override = response.headers.get("x-should-retry")
    if override in ("true", "false"):
        return override == "true"
    return response.status in _RETRY_STATUSES or response.status >= 500


def _retry_delay(response: http_client.Response | None, attempt: int) -> float:
    if response is not None:
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                delay = float(response.headers[name]) * scale
            except (KeyError, ValueError):
                continue
            if 0 <= delay <= 60:
                return delay
    return min(0.5 * 2**attempt, 8.0) * (1 - 0.25 * random.random())


def _http_error(model: str, response: http_client.Response, body: bytes) -> llm.ModelError:
    try:
        detail = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        detail = body.decode(errors="replace")[:500]
    return llm.ModelError(f"{model}: status_code: {response.status}, body: {detail}", status_code=response.status)


@asynccontextmanager
async def _post(model: str, body: dict[str, Any]) -> AsyncIterator[http_client.Response]:
    """The response to `body` (status 200, its body not yet read), after the retries a failure allows."""
    endpoint = _endpoint(model)
    payload = _compact_json(body)
    for attempt in range(MAX_RETRIES + 1):
        response: http_client.Response | None = None
        try:
            async with http_client.request("POST", endpoint.url, headers=endpoint.headers, body=payload, timeouts=TIMEOUTS) as response:
                if response.status == 200:
                    yield response
                    return
                error = _http_error(model, response, await response.read())
                if attempt == MAX_RETRIES or not _should_retry(response):
                    raise error
        except (http_client.HttpError, TimeoutError) as exc:
            if response is not None and response.status == 200:
                raise llm.ModelError(f"{model}: the answer broke off: {llm.describe(exc)}") from exc
            if attempt == MAX_RETRIES:
                raise llm.ModelError(f"{model}: {llm.describe(exc)}") from exc
        await asyncio.sleep(_retry_delay(response, attempt))


# --- Streaming and the tool loop -----------------------------------------------------------------


class _ResponseReader:
    """One streamed model response, read as its bytes arrive (from the connection's callback): its
    text handed to the reply at once, its tool calls and usage gathered for when it is complete."""

    def __init__(self, model: str, reply: llm.ReplyBuilder) -> None:
        self.model, self.reply = model, reply
        self.calls: dict[int, dict[str, Any]] = {}  # index → {"id", "name", "arguments"}
        self.usage = llm.Usage(requests=1)
        self._partial = b""  # the start of a line whose end has not come yet

    def feed(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and (payload := line[5:].strip()) != b"[DONE]":
                self._chunk(orjson.loads(payload))  # a third of json's CPU, per streamed token

    def _chunk(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:
            raise llm.ModelError(f"{self.model}: {chunk['error'].get('message') or chunk['error']}")
        if usage := chunk.get("usage"):
            self.usage = llm.Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, 1)
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if text := delta.get("content"):
                self.reply.text(text)
            for call in delta.get("tool_calls") or ():
                entry = self.calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                entry["id"] = call.get("id") or entry["id"]
                entry["name"] += function.get("name") or ""
                entry["arguments"] += function.get("arguments") or ""


def _messages(system_prompt: str, history: list[llm.HistoryMessage], message: str) -> list[dict[str, Any]]:
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages += [{"role": item.role, "content": item.text} for item in history]
    messages.append({"role": "user", "content": message})
    return messages


def _tool_definition(spec: llm.ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters_json_schema}}


async def _call(call: dict[str, Any], tools: dict[str, llm.ToolSpec]) -> llm.ToolResultEvent:
    name, arguments = call["name"], _arguments(call["arguments"])
    spec = tools.get(name)
    if spec is None:
        error = f"unknown tool {name!r}; the tools are: {', '.join(sorted(tools)) or 'none'}"
        return llm.ToolResultEvent(call["id"], name, arguments or {}, None, error, 0.0)
    if arguments is None:
        return llm.ToolResultEvent(call["id"], name, {}, None, f"invalid arguments for {name}: not a JSON object", 0.0)
    result, error, duration = await llm.run_tool(spec, arguments)
    return llm.ToolResultEvent(call["id"], name, arguments, result, error, duration)


def _arguments(text: str) -> dict[str, Any] | None:
    try:
        arguments = json.loads(text or "{}")
    except ValueError:
        return None
    return arguments if isinstance(arguments, dict) else None


def _result_content(result: llm.ToolResultEvent) -> str:
    if result.error is not None:
        return result.error
    return result.result if isinstance(result.result, str) else json.dumps(result.result, separators=(",", ":"), default=str)


async def stream_reply(
    *,
    model: str,
    name: str,
    system_prompt: str,
    history: list[llm.HistoryMessage],
    message: str,
    tools: list[llm.ToolSpec],
    max_round_trips: int,
    on_text: Callable[[str], None],
) -> AsyncIterator[llm.ReplyEvent]:
    """`llm.stream_reply` for an `openai:` model; `name` is the model's name at the provider. Text
    goes to `on_text` straight from the connection's callback, as it arrives; the rest is yielded."""
    messages = _messages(system_prompt, history, message)
    body: dict[str, Any] = {"model": name, "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
    by_name = {spec.name: spec for spec in tools}
    if tools:
        body["tools"] = [_tool_definition(spec) for spec in tools]
    reply = llm.ReplyBuilder(on_text)
    usage = llm.Usage()
    for round_trip in range(1, max_round_trips + 1):
        reply.new_part()
        response = _ResponseReader(model, reply)
        async with _post(model, body) as answer:
            await answer.deliver(response.feed)
        usage += response.usage
        if not response.calls:
            break
        calls = [response.calls[index] for index in sorted(response.calls)]
        for call in calls:
            yield llm.ToolCallEvent(call["id"], call["name"], _arguments(call["arguments"]) or {})
        results = await asyncio.gather(*(_call(call, by_name) for call in calls))
        for result in results:
            yield result
        requested = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
        messages.append({"role": "assistant", "content": "".join(reply.part) or None, "tool_calls": requested})
        messages += [{"role": "tool", "tool_call_id": result.call_id, "content": _result_content(result)} for result in results]
        if round_trip == max_round_trips:
            reply.limit(max_round_trips)
    yield reply.done(usage, model)


async def complete(*, model: str, name: str, system_prompt: str, prompt: str) -> llm.Completion:
    """`llm.complete` for an `openai:` model: one request, not streamed."""
    async with _post(model, {"model": name, "messages": _messages(system_prompt, [], prompt)}) as response:
        answer = json.loads(await response.read())
    usage = answer.get("usage") or {}
    choices = answer.get("choices") or [{}]
    text = (choices[0].get("message") or {}).get("content") or ""
    return llm.Completion(text=text, usage=llm.Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, 1))
