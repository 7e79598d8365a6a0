"""The one exception handler: every failure under /api/ becomes the envelope (docs/api.md, "Envelope")."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response

from chatplatform.api import bodies
from chatplatform.api.errors import CODES_BY_STATUS, ApiError, Code, RateLimited

logger = logging.getLogger("chatplatform.api")


def flatten_errors(detail: Any, prefix: str = "") -> list[str]:
    """Turn DRF's nested error detail into `field.path: message` lines."""
    if isinstance(detail, dict):
        lines: list[str] = []
        for key, value in detail.items():
            if isinstance(key, int):  # DRF keys errors of list items by their index
                name = f"{prefix}[{key}]"
            else:
                name = prefix if key == "non_field_errors" else (f"{prefix}.{key}" if prefix else str(key))
            lines.extend(flatten_errors(value, name))
        return lines
    if isinstance(detail, list):
        if all(isinstance(item, str) for item in detail):
            return [f"{prefix}: {item}" if prefix else str(item) for item in detail]
        lines = []
        for index, item in enumerate(detail):
            if item:
                lines.extend(flatten_errors(item, f"{prefix}[{index}]"))
        return lines
    return [f"{prefix}: {detail}" if prefix else str(detail)]


def envelope(message: str, code: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"success": False, "error": message}
    if code:
        body["code"] = code
    return body


def _redis_errors() -> tuple[type[Exception], ...]:
    """Redis's connection errors where Redis is used (REDIS_URL): imported there only, as it costs
    every command's start-up (docs/decisions.md, "Settings and start-up")."""
    if not settings.REDIS_URL:
        return ()
    import redis

    return (redis.ConnectionError, redis.TimeoutError)


# A dependency that is down: 503 with Retry-After, so that clients and operators can tell an
# outage (which passes) from a fault of the service (docs/faults.md).
UNAVAILABLE: tuple[type[Exception], ...] = (OperationalError, InterfaceError, *_redis_errors())
RETRY_AFTER_UNAVAILABLE = 5


def handle(exc: Exception, context: dict[str, Any] | None = None) -> Response:
    """DRF's EXCEPTION_HANDLER. Unlike DRF's default it never returns None: unknown errors are 500s."""
    headers: dict[str, str] = {}
    if isinstance(exc, UNAVAILABLE):
        logger.warning("a dependency is unavailable: %s: %s", type(exc).__name__, exc)
        dependency = "the database" if isinstance(exc, OperationalError | InterfaceError) else "the cache"
        body = envelope(f"service unavailable: {dependency} cannot be reached; retry later", Code.SERVICE_UNAVAILABLE)
        return Response(body, status=503, headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})
    if isinstance(exc, RequestDataTooBig):
        exc = bodies.too_large()
    elif isinstance(exc, TooManyFieldsSent):
        exc = exceptions.ParseError(str(exc))
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)

    if isinstance(exc, ApiError):
        body = envelope(exc.message, exc.code)
        if isinstance(exc, RateLimited):
            headers["Retry-After"] = str(exc.retry_after)
        return Response(body, status=exc.status_code, headers=headers)

    if isinstance(exc, exceptions.APIException):
        status_code = exc.status_code
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            status_code = status.HTTP_401_UNAUTHORIZED
            headers["WWW-Authenticate"] = 'Bearer realm="api"'
            message = str(exc.detail)
        elif isinstance(exc, exceptions.ValidationError | exceptions.ParseError):
            message = "; ".join(flatten_errors(exc.detail)) or "invalid request"
            if isinstance(exc, exceptions.ParseError):
                message = f"body: {message}"
        elif isinstance(exc, exceptions.PermissionDenied):
            message = "insufficient permissions" if exc.detail == exceptions.PermissionDenied.default_detail else str(exc.detail)
        else:
            message = str(exc.detail)
        # DRF's Throttled sets `wait`; the stubs leave it out.
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:  # type: ignore[attr-defined]
            headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]
        return Response(envelope(message, CODES_BY_STATUS.get(status_code)), status=status_code, headers=headers)

    logger.exception("unhandled error in %s", (context or {}).get("view").__class__.__name__ if context else "?")
    return Response(envelope("internal error", Code.INTERNAL_ERROR), status=500)
