"""HTTP connections with bounded request heads: the protocol chatplatform.server serves with.

uvicorn's httptools protocol closes a connection left idle after a response (its keep-alive
timeout), but not one that never sends a request, nor one that sends half a request head and
stops; and httptools gathers a header of any size in memory. Each such socket costs memory and a
file descriptor for as long as its client likes. This protocol adds (docs/deploy.md, "Connections"):

- the keep-alive timeout from the moment a connection opens, not only between requests;
- a deadline for a request head, from its first byte to its blank line;
- a 431 for a head of more than CHAT_REQUEST_HEAD_MAX_BYTES or CHAT_REQUEST_HEAD_MAX_FIELDS header
  lines, counted as the bytes arrive: an endless header is refused after its first few kilobytes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httptools
from django.conf import settings
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol


class HeadTooLarge(Exception):
    """Raised from a parser callback; the message is the 431's body."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.timeout_keep_alive = settings.CHAT_KEEP_ALIVE_SECONDS  # type: ignore[assignment]  # uvicorn says int; loop.call_later takes any
        self.head_timeout = settings.CHAT_REQUEST_HEAD_TIMEOUT_SECONDS
        self.head_max_bytes = settings.CHAT_REQUEST_HEAD_MAX_BYTES
        self.head_max_fields = settings.CHAT_REQUEST_HEAD_MAX_FIELDS
        self.head_deadline: asyncio.TimerHandle | None = None
        self.awaiting_head = True  # until a head's blank line; again after each request's body
        self.head_bytes = 0  # of the current head, as parsed
        self.head_fields = 0
        self.unparsed_head_bytes = 0  # received while a head stays unfinished
        self.heads_parsed = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # uvicorn's, with the head's deadline and its size counted across reads.
        self._unset_keepalive_if_required()
        in_head, heads_parsed = self.awaiting_head, self.heads_parsed
        if in_head and self.head_deadline is None:
            self.head_deadline = self.loop.call_later(self.head_timeout, self.timeout_keep_alive_handler)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, HeadTooLarge):
                self.refuse_head(str(exc.__context__))
            else:
                self.logger.warning("Invalid HTTP request received.")
                self.send_400_response("Invalid HTTP request received.")
            return
        # httptools holds a header line until it ends: what it holds is counted here, from reads
        # that fell wholly inside one unfinished head.
        if in_head and self.awaiting_head and self.heads_parsed == heads_parsed:
            self.unparsed_head_bytes += len(data)
            if self.unparsed_head_bytes > self.head_max_bytes:
                self.refuse_head(f"request head larger than {self.head_max_bytes} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.head_bytes = self.head_fields = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._count(len(url), fields=0)

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._count(len(name) + len(value) + 4, fields=1)

    def on_headers_complete(self) -> None:
        self.awaiting_head = False
        self.unparsed_head_bytes = 0
        self.heads_parsed += 1
        self._cancel_head_deadline()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.awaiting_head = True

    def _count(self, size: int, *, fields: int) -> None:
        self.head_bytes += size
        self.head_fields += fields
        if self.head_bytes > self.head_max_bytes:
            raise HeadTooLarge(f"request head larger than {self.head_max_bytes} bytes")
        if self.head_fields > self.head_max_fields:
            raise HeadTooLarge(f"more than {self.head_max_fields} header fields")

    def _cancel_head_deadline(self) -> None:
        if self.head_deadline is not None:
            self.head_deadline.cancel()
            self.head_deadline = None

    def refuse_head(self, reason: str) -> None:
        """431 Request Header Fields Too Large, then close."""
        self.logger.warning("Request head refused: %s.", reason)
        body = reason.encode()
        content = [STATUS_LINE[431]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [b"content-type: text/plain; charset=utf-8\r\n", b"content-length: %d\r\n" % len(body), b"connection: close\r\n\r\n", body]
        )
        self.transport.write(b"".join(content))
        self.transport.close()
