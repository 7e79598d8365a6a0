"""chatplatform.http_client against a scripted HTTP peer on loopback.

Covers: the request as sent; Content-Length and chunked bodies; keep-alive reuse and its limits
(`Connection: close`, a pooled connection the server closed, a block left early); the idle-read
timeout (silence, not total time); a body broken off; a refused connection; an answer that is not
HTTP; chunks delivered as they are sent, to an iterator or to a callback; a body that ends at the close.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from chatplatform.http_client import HttpError, Timeouts, close_connections, request

Step = bytes | Callable[[asyncio.StreamWriter], Awaitable[None]]

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
OK_THEN_CLOSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
QUICK = Timeouts(connect=2, idle_read=2)  # a client that waits for nothing fails in seconds, not hangs


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class ScriptedServer:
    """Connection i answers its requests with `script[i]` in order (bytes, or a coroutine writing them), then closes."""

    def __init__(self, *script: list[Step]) -> None:
        self.script = list(script)
        self.connections = 0
        self.requests: list[bytes] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def url(self, target: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{target}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._tasks.add(asyncio.current_task())  # type: ignore[arg-type]
        steps = self.script[self.connections] if self.connections < len(self.script) else []
        self.connections += 1
        try:
            for step in steps:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line[15:]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0)
                self.requests.append(head + await reader.readexactly(length))
                if isinstance(step, bytes):
                    writer.write(step)
                else:
                    await step(writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed the connection
        finally:
            writer.close()


@pytest.fixture(autouse=True)
async def _fresh_pool() -> AsyncIterator[None]:
    yield
    close_connections()


async def get(url: str, timeouts: Timeouts = QUICK) -> bytes:
    async with request("GET", url, headers={}, body=b"", timeouts=timeouts) as response:
        return await response.read()


async def test_a_response_reports_status_headers_and_body_and_the_server_gets_the_request_as_asked():
    chunked = CHUNKED_HEAD + chunk(b"hello, ") + chunk(b"world") + b"0\r\n\r\n"
    sized = b"HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-Request-Id: abc\r\n\r\nfirst"
    async with ScriptedServer([sized, chunked]) as server:
        headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}
        async with request("POST", server.url("/v1/chat?stream=1"), headers=headers, body=b'{"a": 1}', timeouts=QUICK) as response:
            assert response.status == 201
            assert response.headers["x-request-id"] == "abc"
            assert await response.read() == b"first"
        async with request("GET", server.url(), headers={}, body=b"", timeouts=QUICK) as response:
            assert response.headers["transfer-encoding"] == "chunked"
            assert await response.read() == b"hello, world"

    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/chat?stream=1 HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}".encode() in lines
    assert {b"Content-Length: 8", b"Authorization: Bearer t", b"Content-Type: application/json"} <= set(lines)
    assert body == b'{"a": 1}'
    assert server.requests[1].startswith(b"GET / HTTP/1.1\r\n")


async def test_two_requests_in_a_row_share_one_keep_alive_connection():
    async with ScriptedServer([OK, OK]) as server:
        assert await get(server.url()) == b"ok"
        assert await get(server.url()) == b"ok"
    assert server.connections == 1


async def test_a_response_with_connection_close_is_not_reused():
    async with ScriptedServer([OK_THEN_CLOSE, OK], [OK]) as server:
        assert await get(server.url()) == b"ok"
        assert await get(server.url()) == b"ok"
    assert server.connections == 2
    assert len(server.requests) == 2


async def test_a_pooled_connection_the_server_closed_while_idle_is_replaced():
    async with ScriptedServer([OK], [OK]) as server:  # the first connection closes after one answer
        assert await get(server.url()) == b"ok"
        await asyncio.sleep(0.1)
        assert await get(server.url()) == b"ok"
    assert server.connections == 2


async def hang_up(writer: asyncio.StreamWriter) -> None:
    writer.transport.abort()


async def test_a_request_the_server_hangs_up_on_is_sent_again_only_on_a_reused_connection():
    async with ScriptedServer([OK, hang_up], [OK]) as server:  # closed as the second request came
        assert await get(server.url()) == b"ok"
        assert await get(server.url()) == b"ok"
    assert server.connections == 2

    async with ScriptedServer([hang_up], [OK]) as server:
        with pytest.raises(HttpError, match="before the answer was complete"):
            await get(server.url())
    assert server.connections == 1, "a fresh connection's failure is not retried"


async def test_a_server_silent_after_the_headers_times_out_on_idle_read():
    async def headers_then_silence(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD)
        await writer.drain()
        await asyncio.sleep(5)  # far longer than the client waits

    async with ScriptedServer([headers_then_silence]) as server:
        started = time.monotonic()
        async with request("GET", server.url(), headers={}, body=b"", timeouts=Timeouts(idle_read=0.2)) as response:
            assert response.status == 200
            with pytest.raises(TimeoutError, match=r"no data from the server for 0\.2 s"):
                await response.read()
        assert time.monotonic() - started < 1.0


async def test_the_idle_read_timeout_counts_silence_not_the_whole_answer():
    async def a_chunk_every_tenth_of_a_second(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD)
        for n in range(6):
            await asyncio.sleep(0.1)
            writer.write(chunk(b"%d" % n))
        writer.write(b"0\r\n\r\n")

    async with ScriptedServer([a_chunk_every_tenth_of_a_second]) as server:
        assert await get(server.url(), Timeouts(idle_read=0.2)) == b"012345"


async def test_a_body_broken_off_midway_is_an_error():
    async with (
        ScriptedServer([CHUNKED_HEAD + chunk(b"partial")]) as server,
        request("GET", server.url(), headers={}, body=b"", timeouts=QUICK) as response,
    ):
        with pytest.raises(HttpError, match="before the answer was complete"):
            await response.read()


async def test_a_refused_connection_names_the_host_and_port_quickly():
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # bound, not listening: connecting is refused
        started = time.monotonic()
        with pytest.raises(HttpError, match=rf"cannot connect to 127\.0\.0\.1:{port}"):
            await get(f"http://127.0.0.1:{port}/")
    assert time.monotonic() - started < 1.0


async def test_an_answer_that_is_not_http_is_an_error():
    async with ScriptedServer([b"SSH-2.0-OpenSSH_9.6\r\n\r\n"]) as server:
        with pytest.raises(HttpError, match="not valid HTTP"):
            await get(server.url())


async def test_leaving_the_block_before_reading_the_body_closes_the_connection():
    async with ScriptedServer([OK, OK], [OK]) as server:
        async with request("GET", server.url(), headers={}, body=b"", timeouts=QUICK) as response:
            assert response.status == 200
        assert await get(server.url()) == b"ok"
    assert server.connections == 2


async def test_chunks_are_delivered_as_the_server_sends_them():
    first_seen = asyncio.Event()

    async def two_chunks_waiting_for_the_client(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD)
        await asyncio.sleep(0.05)  # the first chunk comes on its own, while the client waits
        writer.write(chunk(b"first"))
        await first_seen.wait()
        writer.write(chunk(b"second") + b"0\r\n\r\n")

    received = []
    async with (
        ScriptedServer([two_chunks_waiting_for_the_client]) as server,
        request("GET", server.url(), headers={}, body=b"", timeouts=QUICK) as response,
    ):
        async for data in response.chunks():
            received.append(data)
            first_seen.set()
    assert received == [b"first", b"second"]


async def test_deliver_hands_each_chunk_to_the_callback_as_it_arrives():
    first_seen = asyncio.Event()

    async def two_chunks_waiting_for_the_client(writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_HEAD + chunk(b"first"))
        await first_seen.wait()
        writer.write(chunk(b"second") + b"0\r\n\r\n")

    received: list[bytes] = []

    def on_data(data: bytes) -> None:
        received.append(data)
        first_seen.set()

    async with ScriptedServer([two_chunks_waiting_for_the_client, OK]) as server:
        async with request("GET", server.url(), headers={}, body=b"", timeouts=QUICK) as response:
            await response.deliver(on_data)
        assert received == [b"first", b"second"]
        assert await get(server.url()) == b"ok"  # the connection was kept for the next request
    assert server.connections == 1


async def test_an_error_raised_by_the_deliver_callback_ends_the_exchange_with_it():
    async with ScriptedServer([CHUNKED_HEAD + chunk(b"bad") + b"0\r\n\r\n"], [OK]) as server:

        def refuse(data: bytes) -> None:
            raise ValueError(f"cannot read {data!r}")

        with pytest.raises(ValueError, match="cannot read b'bad'"):
            async with request("GET", server.url(), headers={}, body=b"", timeouts=QUICK) as response:
                await response.deliver(refuse)
        assert await get(server.url()) == b"ok"
    assert server.connections == 2  # the failed exchange's connection was not reused


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
        b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\nuntil the end",
    ],
    ids=["http-1.1-close-delimited", "http-1.0"],
)
async def test_a_body_that_ends_when_the_server_closes_is_read_whole(answer):
    async with ScriptedServer([answer]) as server:
        assert await get(server.url()) == b"until the end"
