"""No token in a log line: the WebSocket takes its bearer token as `?token=` (docs/api.md
"Authentication"), and uvicorn logs each socket's path with its query string even with the
access log off. This filter, on the platform's handlers (settings.LOGGING) and the server's
(chatplatform.server), writes such values as [redacted].
"""

from __future__ import annotations

import logging
import re

REDACTED = "[redacted]"
_TOKEN_IN_QUERY = re.compile(r"(?i)([?&](?:access_)?token=)[^&#\s\"']+")


def redact(text: str) -> str:
    return _TOKEN_IN_QUERY.sub(r"\1" + REDACTED, text)


def _redacted(value: object) -> object:
    return redact(value) if isinstance(value, str) else value


class RedactTokens(logging.Filter):
    """Redacts tokens in query strings in a record's message and arguments; keeps every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        # In place, not formatted into the message: uvicorn's access formatter reads the arguments.
        if isinstance(record.args, tuple):
            record.args = tuple(_redacted(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: _redacted(value) for key, value in record.args.items()}
        return True
