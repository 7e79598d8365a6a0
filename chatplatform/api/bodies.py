"""Request bodies: the one place that decides whether a body is too large or nested too deep.

Every way in uses it: DRF views through `JSONParser` (DEFAULT_PARSER_CLASSES), converse over
HTTP and the WebSocket's messages through `chat.turn.admission.parse`. A body larger than
DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 `PAYLOAD_TOO_LARGE`; JSON that does not parse, or that is
nested deeper than MAX_DEPTH, is a 400 naming the body. Never a RecursionError (a 500).
"""

from __future__ import annotations

from typing import IO, Any

import orjson
from django.conf import settings
from rest_framework import exceptions, parsers, status

from chatplatform.api.errors import ApiError, Code

# Deeper than any body of the API needs (an agent's parameter definitions, a chat app's features,
# a user's customData), and shallow enough that every later recursion over the value (DRF's
# JSONField, Django's JSON encoder, CEL) stays far from Python's recursion limit.
MAX_DEPTH = 64


def size_limit() -> int | None:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def too_large() -> ApiError:
    return ApiError(
        f"body: must be at most {size_limit()} bytes", code=Code.PAYLOAD_TOO_LARGE, status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    )


def check_size(size: int) -> None:
    limit = size_limit()
    if limit is not None and size > limit:
        raise too_large()


def _size(body: bytes | str) -> int:
    # A str's UTF-8 size is between its length and four times that: encode only when it matters.
    limit = size_limit()
    if isinstance(body, str) and limit is not None and len(body) * 4 > limit:
        return len(body.encode())
    return len(body)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests containers more than `limit` levels; iterative, and only containers are visited."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        container, depth = stack.pop()
        if depth > limit:
            return True
        items = container.values() if isinstance(container, dict) else container
        stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return False


def load_json(body: bytes | str) -> Any:
    """The JSON value of `body`: 413 when too large, 400 when it does not parse or nests too deep."""
    check_size(_size(body))
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        # orjson refuses nesting beyond 1,024 levels itself ("recursion limit exceeded").
        if "depth limit" in str(exc) or "recursion" in str(exc):
            raise exceptions.ParseError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
        raise exceptions.ParseError(f"JSON parse error - {exc}") from None
    if _deeper_than(value, MAX_DEPTH):
        raise exceptions.ParseError(f"JSON nested deeper than {MAX_DEPTH} levels")
    return value


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser through `load_json`: orjson, the size and depth limits, UTF-8 only (RFC 8259)."""

    def parse(self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Any = None) -> Any:
        if stream is None:
            return {}
        limit = size_limit()
        # Read one byte past the limit: a body without Content-Length (chunked) is bounded too.
        body = stream.read() if limit is None else stream.read(limit + 1)
        return load_json(body) if body else {}
