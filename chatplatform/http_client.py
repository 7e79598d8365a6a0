"""A lean HTTP/1.1 client for model providers' streamed answers (`chatplatform.openai_chat`).

Why not aiohttp or httpx: a streamed answer is one small chunk per token, and the platform's
budget is 5 ms of CPU for a whole 50-token turn (issue 4). Reading a token costs ~70 µs through
aiohttp's client (a StreamReader, a timer re-armed and a task woken per chunk) and more through
httpx, against ~18 µs for an asyncio protocol that is called with the bytes (measured on the
scripted model server, bench/converse.py's machine). So this is that protocol, with httptools,
the llhttp parser uvicorn serves with, doing all of the HTTP parsing (status, headers, chunked
transfer coding, keep-alive). What is ours is small: building a request, pooling keep-alive
connections per event loop, a connect timeout, an idle-read timeout checked by one timer per
response (not re-armed per chunk), and a retry on a fresh connection when a pooled one turns out
to have been closed by the server before any byte of the answer came.

Not supported, on purpose: proxies, redirects, compression, HTTP/2. Model APIs need none of them;
TLS uses the system's trust store (and SSL_CERT_FILE), as the providers' SDKs do.
"""

from __future__ import annotations

import asyncio
import ssl
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

import httptools

USER_AGENT = b"chatplatform"
_PAUSE_ABOVE = 1 << 20  # bytes read and not yet taken by the reader: stop reading the socket


class HttpError(Exception):
    """The exchange failed at the transport level: refused, reset, broken off, unparseable."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float = 5.0
    idle_read: float = 600.0  # seconds without a byte of the answer


@dataclass(frozen=True, slots=True)
class _Origin:
    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> bytes:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (host if self.port == default else f"{host}:{self.port}").encode("idna")


class Response:
    """A response whose status and headers have arrived; its body comes through `chunks()` or `read()`."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection
        self.status = 0
        self.headers: dict[str, str] = {}  # lower-case names; a repeated header keeps its last value

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives: everything received since the last step, joined."""
        return self._connection.chunks()

    async def deliver(self, on_data: Callable[[bytes], None]) -> None:
        """Hand the body to `on_data` as it arrives, called from the connection's own callback (no
        task is woken per chunk); return once the body is complete. An exception `on_data` raises
        ends the exchange and is raised here."""
        await self._connection.deliver(on_data)

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one exchange at a time, parsed as the bytes come."""

    def __init__(self, pool: _Pool, origin: _Origin) -> None:
        self._pool = pool
        self.origin = origin
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.reused = False
        self._response: Response | None = None
        self._headers_ready: asyncio.Future[None] | None = None
        self._body: list[bytes] = []
        self._buffered = 0
        self._paused = False
        self._complete = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self.got_bytes = False  # something of the current answer came
        self._last_read = 0.0
        self._idle_timer: asyncio.TimerHandle | None = None
        self._idle_timeout = 0.0
        self._keep_alive = False
        self._on_data: Callable[[bytes], None] | None = None
        self._ends_at_close = False  # the body has neither a length nor chunks: it ends when the server closes

    # --- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport subclass

    def data_received(self, data: bytes) -> None:
        if self._response is None:  # nothing was asked: a server talking out of turn is not trusted further
            self.close()
            return
        self.got_bytes = True
        self._last_read = self._loop.time()
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(HttpError(f"the server's answer is not valid HTTP: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._pool.forget(self)
        if self._response is not None and not self._complete and self._ends_at_close and exc is None:
            # httptools has no end-of-input call: a body delimited by the close ends here (HTTP/1.0 servers).
            self._complete, self._keep_alive = True, False
            self._wake()
        elif self._response is not None and not self._complete:
            self._fail(HttpError(f"the connection closed before the answer was complete{f': {exc}' if exc else ''}"))

    # --- httptools callbacks ------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        assert self._response is not None
        self._response.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        assert self._response is not None and self._headers_ready is not None
        self._response.status = status = self._parser.get_status_code()
        headers = self._response.headers
        self._ends_at_close = (
            status >= 200
            and status not in (204, 304)
            and "content-length" not in headers
            and "chunked" not in headers.get("transfer-encoding", "").lower()
        )
        if not self._headers_ready.done():
            self._headers_ready.set_result(None)

    def on_body(self, body: bytes) -> None:
        if self._on_data is not None:
            try:
                self._on_data(body)
            except Exception as exc:  # the reader's own failure (a malformed event, say): the exchange ends with it
                self._on_data = None
                self._fail(exc)
            return
        self._body.append(body)
        self._buffered += len(body)
        if self._buffered > _PAUSE_ABOVE and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        self._complete = True
        self._keep_alive = self._parser.should_keep_alive()
        self._wake()

    # --- one exchange -------------------------------------------------------------------------

    async def exchange(self, request: bytes, timeouts: Timeouts) -> Response:
        """Send a request; return once the answer's status and headers are in."""
        assert self._transport is not None
        self._response = Response(self)
        self._headers_ready = self._loop.create_future()
        self._body, self._buffered, self._complete, self._error, self.got_bytes = [], 0, False, None, False
        self._ends_at_close = False
        self._last_read = self._loop.time()
        self._idle_timeout = timeouts.idle_read
        self._idle_timer = self._loop.call_at(self._last_read + self._idle_timeout, self._check_idle)
        self._transport.write(request)
        await self._headers_ready
        return self._response

    def _take_body(self) -> bytes:
        """What of the body is buffered, joined; reading resumes if it was paused for it."""
        data = b"".join(self._body) if len(self._body) > 1 else self._body[0]
        self._body, self._buffered = [], 0
        if self._paused and self._transport is not None and not self.closed:
            self._paused = False
            self._transport.resume_reading()
        return data

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            if self._body:
                yield self._take_body()
                continue
            if self._error is not None:
                raise self._error
            if self._complete:
                return
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    async def deliver(self, on_data: Callable[[bytes], None]) -> None:
        if self._body:
            on_data(self._take_body())
        self._on_data = on_data
        try:
            while not self._complete and self._error is None:
                self._waiter = self._loop.create_future()
                await self._waiter  # woken at the end of the body, or by a failure
        finally:
            self._on_data = self._waiter = None
        if self._error is not None:
            raise self._error

    def finish(self) -> None:
        """The caller is done with the response: keep the connection for the next request, or close it."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        reusable = self._complete and self._keep_alive and self._error is None and not self.closed and not self._body
        self._response = None
        if reusable:
            self.reused = True
            self._pool.release(self)
        else:
            self.close()

    def close(self) -> None:
        self.closed = True
        self._pool.forget(self)
        if self._transport is not None:
            self._transport.close()

    def _check_idle(self) -> None:
        quiet = self._loop.time() - self._last_read
        if quiet >= self._idle_timeout:
            self._fail(TimeoutError(f"no data from the server for {self._idle_timeout:g} s"))
            self.close()
        else:
            self._idle_timer = self._loop.call_at(self._last_read + self._idle_timeout, self._check_idle)

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        if self._headers_ready is not None and not self._headers_ready.done():
            self._headers_ready.set_exception(error)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Pool:
    """Idle keep-alive connections of one event loop, per origin, and a cap on exchanges in flight."""

    def __init__(self, max_connections: int) -> None:
        self.idle: dict[_Origin, list[_Connection]] = {}
        self.open: set[_Connection] = set()
        self.slots = asyncio.Semaphore(max_connections)
        self._tls: ssl.SSLContext | None = None

    def take_idle(self, origin: _Origin) -> _Connection | None:
        idle = self.idle.get(origin)
        while idle:
            connection = idle.pop()
            if not connection.closed:
                return connection
        return None

    async def connect(self, origin: _Origin, timeouts: Timeouts) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = None
        if origin.scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        try:
            async with asyncio.timeout(timeouts.connect):
                _, connection = await loop.create_connection(
                    lambda: _Connection(self, origin), origin.host, origin.port, ssl=tls, server_hostname=origin.host if tls else None
                )
        except TimeoutError:
            raise HttpError(f"connecting to {origin.host}:{origin.port} took longer than {timeouts.connect:g} s") from None
        except OSError as exc:
            raise HttpError(f"cannot connect to {origin.host}:{origin.port}: {exc.strerror or exc}") from exc
        self.open.add(connection)
        return connection

    def release(self, connection: _Connection) -> None:
        self.idle.setdefault(connection.origin, []).append(connection)

    def forget(self, connection: _Connection) -> None:
        self.open.discard(connection)
        idle = self.idle.get(connection.origin)
        if idle and connection in idle:
            idle.remove(connection)

    def close_all(self) -> None:
        for connection in list(self.open):
            connection.close()


# One pool per event loop: a connection belongs to the loop that opened it. Sync callers (Django's
# test client, WSGI) run each request in a loop of its own; their pools go with their loops.
_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pool] = weakref.WeakKeyDictionary()
MAX_CONNECTIONS = 1000  # exchanges in flight per event loop, as the OpenAI SDK's default connection limit


def _pool() -> _Pool:
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None:
        # A pool's connections hold its loop, so the weak key alone never lets go of an ended
        # loop: drop those pools here. Their sockets close when collected (a closed loop can no
        # longer run a transport's close).
        for ended in [other for other in _pools if other.is_closed()]:
            del _pools[ended]
        pool = _pools[loop] = _Pool(MAX_CONNECTIONS)
    return pool


def _origin_and_target(url: str) -> tuple[_Origin, bytes]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise HttpError(f"not an http(s) URL: {url}")
    origin = _Origin(parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return origin, target.encode()


def _request_bytes(method: str, origin: _Origin, target: bytes, headers: dict[str, str], body: bytes) -> bytes:
    lines = [
        method.encode() + b" " + target + b" HTTP/1.1",
        b"Host: " + origin.host_header,
        b"User-Agent: " + USER_AGENT,
        b"Content-Length: " + str(len(body)).encode(),
    ]
    for name, value in headers.items():
        if "\r" in value or "\n" in value:
            raise HttpError(f"header {name} holds a line break")
        lines.append(f"{name}: {value}".encode("latin-1"))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


@asynccontextmanager
async def request(
    method: str, url: str, *, headers: dict[str, str], body: bytes, timeouts: Timeouts = Timeouts()
) -> AsyncIterator[Response]:
    """`async with request(...) as response`: status and headers are in; read the body inside.

    Raises HttpError when the exchange fails at the transport level, TimeoutError when the server
    stays silent for `timeouts.idle_read` seconds. Leaving the block early closes the connection.
    """
    origin, target = _origin_and_target(url)
    payload = _request_bytes(method, origin, target, headers, body)
    pool = _pool()
    connection: _Connection | None = None
    async with pool.slots:
        try:
            while True:
                connection = pool.take_idle(origin) or await pool.connect(origin, timeouts)
                try:
                    response = await connection.exchange(payload, timeouts)
                    break
                except HttpError:
                    # A pooled connection the server closed while it was idle: nothing of the answer
                    # came, so the request can go again on a new connection (as browsers and SDKs do).
                    if not connection.reused or connection.got_bytes:
                        raise
                    connection.close()
            yield response
        except BaseException:
            if connection is not None:
                connection.close()
            raise
        connection.finish()


def close_connections() -> None:
    """Close every pooled connection of the running loop (tests, shutdown)."""
    pool = _pools.get(asyncio.get_running_loop())
    if pool is not None:
        pool.close_all()
