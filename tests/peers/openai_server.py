"""A scripted model server on loopback, for tests and benchmarks.

It speaks OpenAI's Chat Completions at `POST /v1/chat/completions`, its embeddings API at
`POST /v1/embeddings`, and Anthropic's Messages API at `POST /v1/messages` (JSON, and Server-Sent
Events when the request has `stream: true`), so the real provider code runs between the code under
test and the "model". Each request is answered by the next scripted `Reply` (or by a callable
`reply(request_json) -> Reply`), and every request body is recorded so a test can assert what the
model saw: system prompt, history, tools, tool results (`tool_results` and `offered_tools` read
them the same way for both chat APIs).

It is uvicorn serving a small raw ASGI app on its own event loop in a daemon thread, so sync and
async tests can both use it, and hundreds of concurrent streams cost one coroutine each (the
converse benchmark opens 500).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.peers.threaded import ThreadedServer

__all__ = ["OpenAIServer", "Reply", "ToolCall", "hashed_vector"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ReplyScript = Sequence["Reply"] | Callable[[dict[str, Any]], "Reply"]
Embedder = Callable[[str], list[float]]

_WORD = re.compile(r"\S+\s*|\s+")


def hashed_vector(text: str, dimensions: int = 384) -> list[float]:
    """A deterministic vector of `text`: each word adds ±1 to a dimension chosen by its hash, so
    texts that share words point the same way (enough for scripted semantic search)."""
    import hashlib

    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0 if digest[4] & 1 else -1.0
    return vector


@dataclass(frozen=True)
class ToolCall:
    """One function call the scripted model asks for; `arguments` is sent as JSON text."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = field(default_factory=lambda: f"call_{uuid.uuid4().hex[:12]}")

    @property
    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Reply:
    """What the scripted model answers to one request.

    Text is streamed in `chunks` (default: one chunk per word, trailing whitespace kept, so the
    chunks concatenate to `text`); tool calls are streamed as a name chunk then argument chunks.
    A `status` other than 200 answers with `error` (default: an OpenAI-shaped error body) and
    `headers` (e.g. `{"retry-after-ms": "1"}` to make the SDK's retries instant).
    `first_token_delay` is slept before the first chunk, `token_delay` between chunks.
    `break_after` chunks of a streamed answer, the connection is dropped (a model server that dies mid-answer).
    """

    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    prompt_tokens: int = 10
    completion_tokens: int = 5
    status: int = 200
    error: dict[str, Any] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    first_token_delay: float = 0.0
    token_delay: float = 0.0
    chunks: Sequence[str] | None = None
    break_after: int | None = None

    def text_chunks(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        return _WORD.findall(self.text)

    def error_body(self) -> dict[str, Any]:
        if self.error is not None:
            return self.error
        return {"error": {"message": f"scripted failure ({self.status})", "type": "server_error", "param": None, "code": None}}


class OpenAIServer:
    """The server; a context manager (`with OpenAIServer() as server: server.base_url`).

    `script(...)` sets the replies, `requests` holds the bodies received so far (a copy, oldest
    first) and `headers` their headers. A request that finds the script exhausted is answered 500 and counted in `unscripted`,
    so a test that under-scripts fails loudly instead of hanging.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._dialects: list[str] = []  # "openai" or "anthropic", per request
        self._script: list[Reply] = []
        self._reply_fn: Callable[[dict[str, Any]], Reply] | None = None
        self._embedder: Embedder = hashed_vector
        self._embedding_requests: list[dict[str, Any]] = []
        self.unscripted = 0
        self._serving: ThreadedServer | None = None
        self.port = 0
        self.scheme = "http"

    # --- scripting and inspection (called from the test's thread) ----------------------------

    def script(self, replies: ReplyScript) -> None:
        """Replace the script: a list consumed in order, or a callable asked for each request."""
        with self._lock:
            if callable(replies):
                self._reply_fn, self._script = replies, []
            else:
                self._reply_fn, self._script = None, list(replies)

    def embed_with(self, embedder: Embedder) -> None:
        """How `/v1/embeddings` turns each input into a vector (default: `hashed_vector`)."""
        with self._lock:
            self._embedder = embedder

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        """The bodies received at `/v1/embeddings`, oldest first."""
        with self._lock:
            return list(self._embedding_requests)

    def reset(self) -> None:
        """Forget the script and the recorded requests."""
        with self._lock:
            self._embedding_requests.clear()
            self._embedder = hashed_vector
            self._requests.clear()
            self._headers.clear()
            self._dialects.clear()
            self._script.clear()
            self._reply_fn = None
            self.unscripted = 0

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    @property
    def headers(self) -> list[dict[str, str]]:
        """The headers of each recorded request (lower-case names), in the order of `requests`."""
        with self._lock:
            return list(self._headers)

    def tool_results(self, index: int) -> list[tuple[str, str]]:
        """(call id, content) of each tool result request `index` sent back to the model, in order."""
        request = self.requests[index]
        if self._dialects[index] == "openai":
            return [(m["tool_call_id"], m["content"]) for m in request["messages"] if m["role"] == "tool"]
        results = []
        for message in request["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else ():
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    text = content if isinstance(content, str) else "".join(part.get("text", "") for part in content or ())
                    results.append((block["tool_use_id"], text))
        return results

    def offered_tools(self, index: int) -> list[dict[str, Any]]:
        """`{name, description, parameters}` of each tool request `index` offered the model."""
        request = self.requests[index]
        if self._dialects[index] == "openai":
            return [dict(tool["function"]) for tool in request.get("tools", ())]
        return [
            {"name": t["name"], "description": t.get("description", ""), "parameters": t["input_schema"]} for t in request.get("tools", ())
        ]

    @property
    def base_url(self) -> str:
        """The value for `OPENAI_BASE_URL`."""
        return f"{self.scheme}://127.0.0.1:{self.port}/v1"

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self, *, certfile: str | None = None, keyfile: str | None = None) -> OpenAIServer:
        """Serve on a free loopback port; over TLS given a certificate and its key."""
        tls = {"ssl_certfile": certfile, "ssl_keyfile": keyfile} if certfile and keyfile else None
        self.scheme = "https" if tls else "http"
        self._serving = ThreadedServer(self._app, name="openai-server", backlog=2048, tls=tls)  # the converse bench connects 500 at once
        self.port = self._serving.start()
        return self

    def stop(self) -> None:
        if self._serving is not None:
            self._serving.stop()
            self._serving = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- the ASGI app (runs on the server's own loop) --------------------------------------------

    def _next_reply(self, body: dict[str, Any], headers: dict[str, str], dialect: str) -> Reply | None:
        with self._lock:
            self._requests.append(body)
            self._headers.append(headers)
            self._dialects.append(dialect)
            reply_fn = self._reply_fn
            if reply_fn is None:
                if self._script:
                    return self._script.pop(0)
                self.unscripted += 1
                return None
        return reply_fn(body)

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._answer(scope, receive, send)
        except BrokenOff:
            raise  # uvicorn closes the connection mid-body
        except asyncio.CancelledError:
            # stop() cancels replies still sleeping through their scripted delays: nothing is left to answer.
            return

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        if scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/embeddings":
            await self._embeddings(b"".join(chunks), send)
            return
        dialect = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}.get(scope["path"].rstrip("/"))
        if scope["method"] != "POST" or dialect is None:
            await _send_json(
                send, 404, {"error": {"message": f"no route {scope['method']} {scope['path']}", "type": "invalid_request_error"}}
            )
            return
        try:
            body = json.loads(b"".join(chunks) or b"{}")
        except ValueError:
            await _send_json(send, 400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
            return
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        reply = self._next_reply(body, headers, dialect)
        if reply is None:
            error = {"error": {"message": "the test script has no reply left for this request", "type": "server_error"}}
            await _send_json(send, 500, error, {"x-should-retry": "false"})  # fail the test now, not after the SDK's retries
            return
        if reply.status != 200:
            await asyncio.sleep(reply.first_token_delay)
            await _send_json(send, reply.status, reply.error_body(), reply.headers)
            return
        if dialect == "anthropic":
            await anthropic_answer(send, reply, body)
            return
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            await _stream(send, reply, model=str(body.get("model", "")), include_usage=include_usage)
        else:
            await asyncio.sleep(reply.first_token_delay + reply.token_delay * max(len(reply.text_chunks()) - 1, 0))
            await _send_json(send, 200, _completion(reply, model=str(body.get("model", ""))), reply.headers)

    async def _embeddings(self, raw: bytes, send: Send) -> None:
        try:
            body = json.loads(raw or b"{}")
            inputs = body["input"]
            inputs = [inputs] if isinstance(inputs, str) else list(inputs)
        except (ValueError, KeyError, TypeError):
            await _send_json(send, 400, {"error": {"message": "body must be JSON with input", "type": "invalid_request_error"}})
            return
        with self._lock:
            self._embedding_requests.append(body)
            embedder = self._embedder
        data = [{"object": "embedding", "index": index, "embedding": embedder(text)} for index, text in enumerate(inputs)]
        tokens = sum(len(str(text).split()) for text in inputs)
        answer = {
            "object": "list",
            "data": data,
            "model": body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        await _send_json(send, 200, answer)


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _finish_reason(reply: Reply) -> str:
    return "tool_calls" if reply.tool_calls else "stop"


def _completion(reply: Reply, *, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
            for call in reply.tool_calls
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
        "usage": _usage(reply),
    }


def _stream_events(reply: Reply, *, model: str, include_usage: bool) -> Iterator[tuple[bool, dict[str, Any]]]:
    """(is_token, chunk) pairs in wire order; a token chunk is preceded by the scripted delay."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex[:16]}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    yield False, chunk({"role": "assistant", "content": ""})
    for text in reply.text_chunks():
        yield True, chunk({"content": text})
    for index, call in enumerate(reply.tool_calls):
        head = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        yield True, chunk({"tool_calls": [head]})
        arguments = call.arguments_json
        for start in range(0, len(arguments), 16):  # split like real servers do, mid-token
            yield True, chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[start : start + 16]}}]})
    yield False, chunk({}, _finish_reason(reply))
    if include_usage:
        yield False, {**base, "choices": [], "usage": _usage(reply)}


class BrokenOff(Exception):
    """Raised by the app mid-answer: uvicorn then drops the connection without ending the body."""


async def stream_frames(send: Send, reply: Reply, frames: Iterator[tuple[bool, bytes]], end: bytes) -> None:
    """Send an SSE answer: `frames` as (is_token, bytes), each token after its scripted delay."""
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    headers += [(k.lower().encode(), v.encode()) for k, v in reply.headers.items()]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    tokens = 0
    for is_token, frame in frames:
        if is_token:
            if reply.break_after is not None and tokens == reply.break_after:
                raise BrokenOff(f"scripted break after {tokens} chunks")
            await asyncio.sleep(reply.first_token_delay if tokens == 0 else reply.token_delay)
            tokens += 1
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": end, "more_body": False})


async def _stream(send: Send, reply: Reply, *, model: str, include_usage: bool) -> None:
    events = _stream_events(reply, model=model, include_usage=include_usage)
    frames = ((is_token, f"data: {json.dumps(payload)}\n\n".encode()) for is_token, payload in events)
    await stream_frames(send, reply, frames, b"data: [DONE]\n\n")


async def _send_json(send: Send, status: int, payload: dict[str, Any], extra_headers: Mapping[str, str] | None = None) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.lower().encode(), v.encode()) for k, v in (extra_headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# --- Anthropic's Messages API (`anthropic:` models) --------------------------------------------------


def _anthropic_usage(reply: Reply) -> dict[str, int]:
    return {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens}


def _anthropic_message(reply: Reply, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": json.loads(call.arguments_json)} for call in reply.tool_calls
    ]
    return {
        "id": f"msg_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": _anthropic_usage(reply),
    }


def _anthropic_events(reply: Reply, model: str) -> Iterator[tuple[bool, str, dict[str, Any]]]:
    """(is_token, event name, data) in wire order."""
    start = {**_anthropic_message(Reply(), model), "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": 0}}
    yield False, "message_start", {"type": "message_start", "message": start}
    index = 0
    if reply.text:
        yield False, "content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
        for text in reply.text_chunks():
            yield True, "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
        yield False, "content_block_stop", {"type": "content_block_stop", "index": 0}
        index = 1
    for number, call in enumerate(reply.tool_calls, start=index):
        block = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        yield True, "content_block_start", {"type": "content_block_start", "index": number, "content_block": block}
        arguments = call.arguments_json
        for at in range(0, len(arguments), 16):
            delta = {"type": "input_json_delta", "partial_json": arguments[at : at + 16]}
            yield True, "content_block_delta", {"type": "content_block_delta", "index": number, "delta": delta}
        yield False, "content_block_stop", {"type": "content_block_stop", "index": number}
    stop = {"stop_reason": "tool_use" if reply.tool_calls else "end_turn", "stop_sequence": None}
    yield False, "message_delta", {"type": "message_delta", "delta": stop, "usage": {"output_tokens": reply.completion_tokens}}


async def anthropic_answer(send: Send, reply: Reply, body: dict[str, Any]) -> None:
    model = str(body.get("model", ""))
    if not body.get("stream"):
        await asyncio.sleep(reply.first_token_delay + reply.token_delay * max(len(reply.text_chunks()) - 1, 0))
        await _send_json(send, 200, _anthropic_message(reply, model), reply.headers)
        return
    frames = (
        (is_token, f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()) for is_token, name, data in _anthropic_events(reply, model)
    )
    await stream_frames(send, reply, frames, b'event: message_stop\ndata: {"type": "message_stop"}\n\n')


def main(argv: Sequence[str] | None = None) -> None:
    """Serve one fixed reply to every request, in its own process (benchmarks: the client keeps the CPU).

    `python -m tests.peers.openai_server --tokens 50 --first-token-delay 0.3 --token-delay 0.02`
    prints the base URL (for OPENAI_BASE_URL) and serves until interrupted.
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--tokens", type=int, default=50, help="words in each reply")
    parser.add_argument("--first-token-delay", type=float, default=0.3, help="seconds before the first token")
    parser.add_argument("--token-delay", type=float, default=0.02, help="seconds between tokens")
    parser.add_argument("--complete-text", default=None, help="the answer to requests that do not stream (default: the same words)")
    parser.add_argument("--complete-delay", type=float, default=0.3, help="with --complete-text: seconds before that answer")
    options = parser.parse_args(argv)
    reply = Reply(
        text=" ".join(f"token{i}" for i in range(options.tokens)),
        prompt_tokens=100,
        completion_tokens=options.tokens,
        first_token_delay=options.first_token_delay,
        token_delay=options.token_delay,
    )
    complete = reply
    if options.complete_text is not None:  # side steps (directive selection, titles) answer this at once, after the delay
        text = options.complete_text
        complete = Reply(text=text, chunks=[text], prompt_tokens=100, first_token_delay=options.complete_delay)
    server = OpenAIServer()
    server.script(lambda body: reply if body.get("stream") else complete)
    with server:
        print(server.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
