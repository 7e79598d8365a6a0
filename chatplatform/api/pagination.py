"""Both pagination styles (docs/api.md, "Pagination"): `size`/`scrollId` and `paginationToken`.

Tokens are opaque to clients and signed, so a forged or garbled token is a 400, never a 500 and
never a peek at rows the token did not point to.
"""

from __future__ import annotations

from typing import Any

from django.core import signing

from chatplatform.api.errors import InvalidRequest
from chatplatform.api.fields import whole_number

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


def page_size(value: Any, *, field: str = "size", default: int = DEFAULT_PAGE_SIZE, maximum: int = MAX_PAGE_SIZE) -> int:
    """A page size from the request: absent → default; not a whole number from 1 to maximum → 400."""
    if value is None or value == "":
        return default
    if isinstance(value, str):
        value = whole_number(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidRequest(f"must be a whole number from 1 to {maximum}", field=field)
    return value


def encode_token(position: dict[str, Any], *, kind: str) -> str:
    """An opaque, signed continuation token. `kind` keeps one endpoint's tokens out of another's."""
    return signing.dumps(position, salt=f"chatplatform.pagination.{kind}", compress=True)


def decode_token(token: Any, *, kind: str, field: str = "paginationToken") -> dict[str, Any] | None:
    """The position a token points to; None for the first page; 400 for anything forged or garbled."""
    if token is None or token == "":
        return None
    if not isinstance(token, str):
        raise InvalidRequest("must be a token string from a previous response", field=field)
    try:
        position = signing.loads(token, salt=f"chatplatform.pagination.{kind}")
    except (signing.BadSignature, ValueError, TypeError, UnicodeDecodeError):
        raise InvalidRequest("is not a valid token from a previous response", field=field) from None
    if not isinstance(position, dict):
        raise InvalidRequest("is not a valid token from a previous response", field=field)
    return position
