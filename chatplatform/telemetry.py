"""Traces of every turn through OpenTelemetry (docs/deploy.md, "Traces").

Set up only when the SDK's standard variables name an exporter (OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, read by settings.py); otherwise `ENABLED` stays false, `span` hands out one shared
empty context manager and nothing of the SDK is imported, so a turn pays a flag check per stage.

Spans follow the context (contextvars): a task or a database-thread hop started inside a span
carries it, so the turn's task, its tool calls and its collaborators nest under `chat.turn`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

ENABLED = False  # an exporter is configured and the tracer provider set up
CAPTURE_CONTENT = False  # prompts and answers recorded (the GenAI conventions' opt-in variable)

_tracer: Any = None
_NO_SPAN: AbstractContextManager[None] = nullcontext()

Scope = MutableMapping[str, Any]
AsgiApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def setup() -> None:
    """The tracer provider with a batching OTLP/HTTP exporter, once per process; nothing without an exporter."""
    global ENABLED, CAPTURE_CONTENT, _tracer
    from django.conf import settings

    if ENABLED or not settings.OTEL_TRACES_EXPORTED:
        return
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": settings.OTEL_SERVICE_NAME})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint, headers, timeout: the OTEL_* variables
    trace.set_tracer_provider(provider)
    _tracer = trace.get_tracer("chatplatform")
    CAPTURE_CONTENT = settings.OTEL_CAPTURE_CONTENT
    ENABLED = True


def span(name: str, attributes: Mapping[str, Any] | None = None) -> AbstractContextManager[Any]:
    """A span of the current trace, current while the block runs (None when tracing is off)."""
    if not ENABLED:
        return _NO_SPAN
    return _tracer.start_as_current_span(name, attributes=attributes)


def set_attributes(current: Any, attributes: Mapping[str, Any]) -> None:
    """Attributes known once the stage ran (usage, finish reasons); nothing when tracing is off."""
    if current is not None:
        current.set_attributes({key: value for key, value in attributes.items() if value is not None})


def annotate(attributes: Mapping[str, Any]) -> None:
    """Attributes on the current span (the turn's session, known once its ticket is taken)."""
    if ENABLED:
        from opentelemetry import trace

        trace.get_current_span().set_attributes(attributes)


def failed(message: str) -> None:
    """The current span (the turn) marked as failed, with what its client was told."""
    if ENABLED:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        trace.get_current_span().set_status(Status(StatusCode.ERROR, message))


def content(current: Any, name: str, value: Any) -> None:
    """A prompt or an answer on the span, only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true."""
    if current is not None and CAPTURE_CONTENT:
        current.set_attribute(name, value if isinstance(value, str) else _json(value))


def inject(headers: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """`headers` with the current span's W3C `traceparent` (outgoing model, MCP and webhook requests)."""
    if ENABLED:
        from opentelemetry.propagate import inject as propagate

        propagate(headers)
    return headers


def incoming(app: AsgiApp) -> AsgiApp:
    """The ASGI app with an incoming `traceparent` (an HTTP request's, a WebSocket handshake's) made
    the current context, so a turn started by the request is the caller's child. Itself when tracing is off."""
    if not ENABLED:
        return app
    from opentelemetry import context
    from opentelemetry.propagate import extract

    async def traced(scope: Scope, receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        carrier = _carrier(scope.get("headers") or ())
        if "traceparent" not in carrier:
            return await app(scope, receive, send)
        token = context.attach(extract(carrier))
        try:
            return await app(scope, receive, send)
        finally:
            context.detach(token)

    return traced


def _carrier(headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in headers if name.lower() in _PROPAGATED}


_PROPAGATED = {b"traceparent", b"tracestate"}


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value, default=str).decode()
