"""Prometheus metrics (prometheus-client): requests, turns, model calls (tokens and latency), tools.

Served at `/metrics` to whoever holds CHAT_METRICS_TOKEN (`Authorization: Bearer <token>`, for a
scraper) or is an admin (a staff session, or a bearer JWT with CHAT_ADMIN_ROLE); 401 without
credentials, 403 for anyone else (docs/deploy.md).

Several server processes (uvicorn --workers, task workers): set PROMETHEUS_MULTIPROC_DIR to an
empty directory shared by them before they start. Each process then writes its samples there and
`/metrics` in any process sums them all (prometheus-client's multiprocess mode).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from rest_framework import exceptions

from chatplatform.api.authentication import decode_token

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

REQUESTS = Counter(
    "chat_http_requests_total", "HTTP requests answered, by kind of endpoint, method and status.", ["endpoint", "method", "status"]
)
REQUEST_SECONDS = Histogram(
    "chat_http_request_duration_seconds", "Time from a request to its response's first byte.", ["endpoint"], buckets=_LATENCY
)
TURNS = Counter("chat_turns_total", "Converse turns finished, by outcome (done, failed, cancelled).", ["outcome"])
TURN_SECONDS = Histogram("chat_turn_duration_seconds", "Time a turn took, from its ticket to its end.", ["outcome"], buckets=_LATENCY)
MODEL_CALLS = Counter("chat_model_calls_total", "Model calls, by stage of the turn and model.", ["stage", "model"])
MODEL_SECONDS = Histogram("chat_model_call_duration_seconds", "Latency of a model call, by stage.", ["stage"], buckets=_LATENCY)
TOKENS = Counter("chat_model_tokens_total", "Tokens of model calls, by model and direction (input, output).", ["model", "direction"])
TOOL_CALLS = Counter("chat_tool_calls_total", "Tool calls, by outcome (ok, error).", ["outcome"])
TOOL_SECONDS = Histogram("chat_tool_call_duration_seconds", "Time a tool call took.", ["outcome"], buckets=_LATENCY)
WIDGET_SCRIPT_DECODES = Counter(
    "chat_widget_script_decodes_total",
    "Store-located web component scripts decoded (once per stored version), by outcome (ok, refused).",
    ["outcome"],
)


def turn_finished(outcome: str, seconds: float) -> None:
    if not settings.CHAT_METRICS_ENABLED:
        return
    TURNS.labels(outcome).inc()
    TURN_SECONDS.labels(outcome).observe(seconds)


def model_called(stage: str, model: str, input_tokens: int, output_tokens: int, seconds: float) -> None:
    if not settings.CHAT_METRICS_ENABLED:
        return
    MODEL_CALLS.labels(stage, model).inc()
    MODEL_SECONDS.labels(stage).observe(seconds)
    TOKENS.labels(model, "input").inc(input_tokens)
    TOKENS.labels(model, "output").inc(output_tokens)


def tool_called(ok: bool, seconds: float) -> None:
    if not settings.CHAT_METRICS_ENABLED:
        return
    outcome = "ok" if ok else "error"
    TOOL_CALLS.labels(outcome).inc()
    TOOL_SECONDS.labels(outcome).observe(seconds)


def widget_script_decoded(ok: bool) -> None:
    if settings.CHAT_METRICS_ENABLED:
        WIDGET_SCRIPT_DECODES.labels("ok" if ok else "refused").inc()


# --- Requests: an ASGI wrapper around the whole application ------------------------------------------

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


def _endpoint(path: str) -> str:
    """A few kinds, not paths: a label per path would grow with every session id."""
    if path == "/api/chat/converse":
        return "converse"
    if path.startswith("/api/chat-admin/"):
        return "admin-api"
    if path.startswith("/api/"):
        return "chat-api"
    if path.startswith("/static/"):
        return "static"
    return "page"


access_log = logging.getLogger("chatplatform.access")


class RequestMetrics:
    """Counts every HTTP request by the status it is answered with, and times its first byte. With
    LOG_FORMAT=json it also logs one line per request (uvicorn's access log is text only: run it
    with --no-access-log then; docs/deploy.md)."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner
        self.log = settings.LOG_FORMAT == "json"

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        counted = settings.CHAT_METRICS_ENABLED
        if scope["type"] != "http" or not (counted or self.log):
            return await self.inner(scope, receive, send)
        started = time.perf_counter()
        endpoint = _endpoint(scope["path"])

        async def timed_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seconds = time.perf_counter() - started
                if counted:
                    REQUESTS.labels(endpoint, scope["method"], str(message["status"])).inc()
                    REQUEST_SECONDS.labels(endpoint).observe(seconds)
                if self.log:
                    access_log.info(
                        "request",
                        extra={
                            "method": scope["method"],
                            "path": scope["path"],
                            "status": message["status"],
                            "durationMs": round(seconds * 1000, 1),
                            "client": (scope.get("client") or ("", 0))[0],
                        },
                    )
            await send(message)

        await self.inner(scope, receive, timed_send)


# --- /metrics -----------------------------------------------------------------------------------------


def _allowed(request: HttpRequest) -> bool | None:
    """True for the scraper's token or an admin; False for another caller; None without credentials."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token:
        if settings.CHAT_METRICS_TOKEN and hmac.compare_digest(token.encode(), settings.CHAT_METRICS_TOKEN.encode()):
            return True
        try:
            claims = decode_token(token)
        except exceptions.AuthenticationFailed:
            return None
        return settings.CHAT_ADMIN_ROLE in (claims.get("roles") or [])
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return bool(user.is_staff)
    return None


def _registry() -> CollectorRegistry:
    if not settings.PROMETHEUS_MULTIPROC_DIR:
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def metrics_view(request: HttpRequest) -> HttpResponse:
    if not settings.CHAT_METRICS_ENABLED:
        raise Http404("metrics are off (CHAT_METRICS_ENABLED)")
    allowed = _allowed(request)
    if allowed is None:
        response = JsonResponse({"success": False, "error": "authentication required", "code": "AUTHENTICATION_REQUIRED"}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not allowed:
        return JsonResponse({"success": False, "error": "insufficient permissions", "code": "INSUFFICIENT_PERMISSIONS"}, status=403)
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
