"""A webhook receiver on loopback, for tests and benchmarks: it records every POST (headers, body,
arrival time) and answers each with the next scripted `Answer` (200 when the script is empty),
after the answer's delay. `verify(secret)` checks a recorded request's signature as a receiver would."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.peers.threaded import ThreadedServer

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Answer:
    status: int = 200
    delay: float = 0.0
    body: str = "ok"


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes
    at: float  # time.time() on arrival

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)

    @property
    def event(self) -> str:
        return self.headers["x-webhook-event"]

    @property
    def webhook_id(self) -> str:
        return self.headers["x-webhook-id"]

    def verify(self, secret: str) -> bool:
        """The receiver's check (docs/api.md, "Webhooks"): HMAC-SHA256 of "<timestamp>.<body>"."""
        expected = hmac.new(secret.encode(), f"{self.headers['x-webhook-timestamp']}.".encode() + self.body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(self.headers.get("x-webhook-signature", ""), f"sha256={expected}")


class WebhookReceiver:
    """`with WebhookReceiver() as receiver: receiver.url`; `script([...])` sets the answers."""

    def __init__(self, *, default: Answer = Answer()) -> None:
        self._lock = threading.Lock()
        self._received: list[Received] = []
        self._script: list[Answer] = []
        self.default = default
        self._serving: ThreadedServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def script(self, answers: Sequence[Answer]) -> None:
        with self._lock:
            self._script = list(answers)

    @property
    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def of(self, event: str) -> list[Received]:
        return [request for request in self.received if request.event == event]

    def wait_for(self, predicate: Callable[[list[Received]], bool], timeout: float = 20.0) -> list[Received]:
        """The requests received once `predicate(requests)` holds; AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            received = self.received
            if predicate(received):
                return received
            if time.monotonic() > deadline:
                raise AssertionError(f"the receiver got {[(r.event, r.webhook_id) for r in received]}, not what was awaited")
            time.sleep(0.02)

    def start(self) -> WebhookReceiver:
        self._serving = ThreadedServer(self._app, name="webhook-receiver", backlog=2048)
        self.port = self._serving.start()
        return self

    def stop(self) -> None:
        if self._serving is not None:
            self._serving.stop()
            self._serving = None

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        with self._lock:
            self._received.append(Received(headers, b"".join(chunks), time.time()))
            answer = self._script.pop(0) if self._script else self.default
        try:
            await asyncio.sleep(answer.delay)
        except asyncio.CancelledError:
            return
        body = answer.body.encode()
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
