"""`openai:` models (docs/api.md, "Models"): OpenAI's Chat Completions, or any server at OPENAI_BASE_URL that speaks it.

Not through pydantic-ai: the OpenAI SDK builds a pydantic model of every streamed chunk, which
cost a streamed turn more CPU than the rest of the platform (docs/decisions.md). Here the
request is built from the `ModelRequest` and each Server-Sent Events line of the answer is
decoded with orjson as it arrives, text handed to the sink at once.
"""

from __future__ import annotations

import base64
from typing import Any

import aiohttp
import orjson
from django.conf import settings

from chatplatform import telemetry
from chatplatform.llm import http
from chatplatform.llm.types import (
    AssistantTurn,
    Completion,
    HistoryMessage,
    ModelError,
    ModelRequest,
    ModelResponse,
    Sink,
    ToolCall,
    ToolOutput,
    ToolSpec,
    Usage,
    describe,
)
from chatplatform.model_names import ModelRef

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Placeholder key for OpenAI-compatible servers that need none (vLLM, Ollama, llama.cpp): some refuse an empty one.
PLACEHOLDER_API_KEY = "not-set"
MAX_RETRY_AFTER = 10.0  # seconds; a server asking for longer gets its failure reported instead


def _endpoint(model: str) -> tuple[str, dict[str, str]]:
    """The Chat Completions URL and headers, from OPENAI_BASE_URL and OPENAI_API_KEY (read per call: tests change them)."""
    base_url, api_key = settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY
    if api_key is None:
        if base_url is None:
            raise ModelError(f"{model}: set OPENAI_API_KEY, or OPENAI_BASE_URL for a compatible server that needs no key")
        api_key = PLACEHOLDER_API_KEY
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json", "Accept": "application/json"}
    telemetry.inject(headers)  # the model call's span as the provider's parent (docs/deploy.md, "Traces")
    return f"{(base_url or DEFAULT_BASE_URL).rstrip('/')}/chat/completions", headers


# --- The request ---------------------------------------------------------------------------------


def _user_content(message: HistoryMessage) -> str | list[dict[str, Any]]:
    if not message.attachments:
        return message.text
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}]
    for attachment in message.attachments:
        if attachment.is_image:
            data = base64.b64encode(attachment.data).decode()
            parts.append({"type": "image_url", "image_url": {"url": f"data:{attachment.mime_type};base64,{data}"}})
        else:
            parts.append({"type": "text", "text": attachment.as_text()})
    return parts


def _message(message: Any) -> list[dict[str, Any]]:
    if isinstance(message, HistoryMessage):
        return [{"role": message.role, "content": _user_content(message) if message.role == "user" else message.text}]
    if isinstance(message, AssistantTurn):
        calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in message.tool_calls]
        return [{"role": "assistant", "content": message.text or None, **({"tool_calls": calls} if calls else {})}]
    assert isinstance(message, ToolOutput)
    return [{"role": "tool", "tool_call_id": message.call.id, "content": message.content}]


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec.name, "description": spec.description, "parameters": spec.parameters_json_schema}}


def _body(request: ModelRequest, *, stream: bool) -> dict[str, Any]:
    messages = [{"role": "system", "content": request.system_prompt}] if request.system_prompt else []
    for message in request.messages:
        messages += _message(message)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if stream:
        body["stream"], body["stream_options"] = True, {"include_usage": True}
    if request.tools:
        body["tools"] = [_tool(spec) for spec in request.tools]
    return body


# --- The answer ----------------------------------------------------------------------------------


def _retry_after(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            delay = float(headers[name]) * scale
        except (KeyError, ValueError):
            continue
        if 0 <= delay <= MAX_RETRY_AFTER:
            return delay
    return None


def _http_error(model: str, status: int, headers: Any, body: bytes) -> ModelError:
    try:
        detail = orjson.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        detail = body.decode(errors="replace")[:500]
    return ModelError(
        f"{model}: status_code: {status}, body: {detail}",
        status_code=status,
        # OpenAI's servers may say a failure will not pass (`x-should-retry: false`); they never widen the rule.
        retryable=(status == 429 or status >= 500) and headers.get("x-should-retry") != "false",
        retry_after=_retry_after(headers),
    )


async def _post(model: str, request: ModelRequest, *, stream: bool) -> aiohttp.ClientResponse:
    """The 200 response to the request, its body not yet read; ModelError otherwise."""
    url, headers = _endpoint(model)
    try:
        response = await http.session().post(
            url, data=orjson.dumps(_body(request, stream=stream)), headers=headers, proxy=http.proxy_for(url)
        )
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ModelError(f"{model}: {describe(exc)}", retryable=True) from exc
    if response.status != 200:
        try:
            body = await response.read()
        except (aiohttp.ClientError, TimeoutError):
            body = b""
        finally:
            response.release()
        raise _http_error(model, response.status, response.headers, body)
    return response


class _Reader:
    """One streamed response, read as its bytes arrive: text to the sink at once, tool calls and
    usage gathered for when it is complete."""

    def __init__(self, model: str, sink: Sink) -> None:
        self.model, self.sink = model, sink
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}  # index → {"id", "name", "arguments"}
        self.usage = Usage(requests=1)
        self._partial = b""  # the start of a line whose end has not come yet

    def feed(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and (payload := line[5:].strip()) != b"[DONE]":
                self._chunk(orjson.loads(payload))

    def _chunk(self, chunk: dict[str, Any]) -> None:
        if "error" in chunk:
            error = chunk["error"]
            raise ModelError(f"{self.model}: {error.get('message') if isinstance(error, dict) else error}")
        if usage := chunk.get("usage"):
            self.usage = Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, 1)
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if text := delta.get("content"):
                self.text.append(text)
                self.sink.text(text)
            for call in delta.get("tool_calls") or ():
                self.sink.alive()
                entry = self.calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                entry["id"] = call.get("id") or entry["id"]
                entry["name"] += function.get("name") or ""
                entry["arguments"] += function.get("arguments") or ""

    def response(self) -> ModelResponse:
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for _, c in sorted(self.calls.items()))
        return ModelResponse("".join(self.text), calls, self.usage)


async def stream(ref: ModelRef, request: ModelRequest, sink: Sink) -> ModelResponse:
    reader = _Reader(str(ref), sink)
    response = await _post(str(ref), request, stream=True)
    try:
        async for data in response.content.iter_any():
            reader.feed(data)
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ModelError(f"{ref}: the answer broke off: {describe(exc)}", retryable=True) from exc
    except ValueError as exc:
        raise ModelError(f"{ref}: the answer is not Chat Completions JSON: {exc}") from exc
    finally:
        response.release()
    return reader.response()


async def complete(ref: ModelRef, request: ModelRequest) -> Completion:
    response = await _post(str(ref), request, stream=False)
    try:
        answer = orjson.loads(await response.read())
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise ModelError(f"{ref}: the answer broke off: {describe(exc)}", retryable=True) from exc
    except ValueError as exc:
        raise ModelError(f"{ref}: the answer is not Chat Completions JSON: {exc}") from exc
    finally:
        response.release()
    usage = answer.get("usage") or {}
    choices = answer.get("choices") or [{}]
    text = (choices[0].get("message") or {}).get("content") or ""
    return Completion(text=text, usage=Usage(usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0, 1))
