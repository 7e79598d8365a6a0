"""Infrastructure-as-code batches (docs/api.md, "Infrastructure-as-code batches"): `data` is base64 of gzip of a JSON object.

Shared by the directive and tag definition batch endpoints and commands.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
from typing import Any

from django.conf import settings

from chatplatform.api.errors import InvalidRequest

MAX_BATCH_BYTES = 20 * 1024 * 1024  # decompressed; a gzip bomb stops here


def encode_batch(payload: dict[str, Any]) -> str:
    """The inverse of `decode_batch`, for commands and tests."""
    return base64.b64encode(gzip.compress(json.dumps(payload).encode(), mtime=0)).decode()  # same input, same batch


def decode_batch(data: Any) -> dict[str, Any]:
    """The JSON object inside `data`; 400 naming `data` when it is not base64 → gzip → JSON object."""
    if not isinstance(data, str) or not data:
        raise InvalidRequest("is required: base64 of gzip of the batch JSON", field="data")
    try:
        compressed = base64.b64decode(data, validate=True)
        with gzip.GzipFile(fileobj=io.BytesIO(compressed)) as stream:
            raw = stream.read(MAX_BATCH_BYTES + 1)
    except (binascii.Error, OSError, EOFError):
        raise InvalidRequest("must be base64 of gzip-compressed JSON", field="data") from None
    if len(raw) > MAX_BATCH_BYTES:
        raise InvalidRequest(f"decompresses to more than {MAX_BATCH_BYTES} bytes", field="data")
    try:
        payload = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidRequest("does not hold valid JSON", field="data") from None
    if not isinstance(payload, dict):
        raise InvalidRequest("must hold a JSON object", field="data")
    return payload


def check_stage(stage: Any) -> None:
    """A batch is for one deployment stage: it must equal CHAT_STAGE."""
    if stage != settings.CHAT_STAGE:
        raise InvalidRequest(f"must equal this deployment's stage {settings.CHAT_STAGE!r}", field="stage")
