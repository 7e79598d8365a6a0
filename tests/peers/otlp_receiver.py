"""An OTLP/HTTP trace receiver on loopback, for tests: it decodes each `POST /v1/traces`
(protobuf `ExportTraceServiceRequest`, decoded with opentelemetry-proto, as a collector would) and
keeps every span, so a test can look at the tree a process exported."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.peers.threaded import ThreadedServer

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class Span:
    name: str
    trace_id: str  # hex, as in a traceparent
    span_id: str
    parent_span_id: str  # "" for a root
    attributes: dict[str, Any]
    service_name: str
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str


class OtlpReceiver:
    """`with OtlpReceiver() as receiver: receiver.url`; `receiver.spans` is what arrived so far."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[Span] = []
        self._server = ThreadedServer(self._app, name="otlp-receiver")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}"

    @property
    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def wait_for(self, predicate: Callable[[list[Span]], bool], timeout: float = 10.0) -> list[Span]:
        """The spans once `predicate(spans)` holds (exporters send in batches); AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        while not predicate(spans := self.spans):
            if time.monotonic() > deadline:
                raise AssertionError(f"spans never matched; received: {sorted(span.name for span in spans)}")
            time.sleep(0.05)
        return spans

    def __enter__(self) -> OtlpReceiver:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        if scope["path"] != "/v1/traces" or scope["method"] != "POST":
            await _answer(send, 404, b"")
            return
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            self._spans += _spans_of(request)
        await _answer(send, 200, ExportTraceServiceResponse().SerializeToString())


def _spans_of(request: ExportTraceServiceRequest) -> list[Span]:
    found = []
    for resource_spans in request.resource_spans:
        resource = {kv.key: _value(kv.value) for kv in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    Span(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        attributes={kv.key: _value(kv.value) for kv in span.attributes},
                        service_name=str(resource.get("service.name", "")),
                        status_code=span.status.code,
                        status_message=span.status.message,
                    )
                )
    return found


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/x-protobuf")]})
    await send({"type": "http.response.body", "body": body})
