"""Bounded connections (docs/deploy.md "Connections"): the server closes a socket that stays idle
or sends half a request head, and refuses an oversized head with a 431 before it has read much of it."""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import ServerProcess, asgi_server, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

KEEP_ALIVE = 1.0
HEAD_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def server(migrated_sqlite: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    database = migrated_copy(migrated_sqlite, tmp_path_factory.mktemp("connections"))
    env = sqlite_env(database, CHAT_KEEP_ALIVE_SECONDS=str(KEEP_ALIVE), CHAT_REQUEST_HEAD_TIMEOUT_SECONDS=str(HEAD_TIMEOUT))
    with asgi_server(env) as running:
        yield running


def open_socket(server: ServerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def seconds_until_closed(sock: socket.socket, *, trickle: bytes = b"") -> float:
    """Seconds until the server closes `sock`, sending `trickle` one byte every 0.25 s meanwhile."""
    started = time.monotonic()
    while time.monotonic() - started < 30:
        if select.select([sock], [], [], 0.25)[0]:
            try:
                if sock.recv(65536) == b"":
                    return time.monotonic() - started
            except ConnectionResetError:
                return time.monotonic() - started
        elif trickle:
            sock.send(trickle[:1])
            trickle = trickle[1:] or b" "
    raise AssertionError("the server kept the socket open for 30 s")


def test_a_connection_that_never_sends_a_request_is_closed_after_the_keep_alive_time(server):
    with open_socket(server) as sock:
        assert KEEP_ALIVE * 0.8 < seconds_until_closed(sock) < KEEP_ALIVE + 1.5


def test_a_half_sent_request_head_is_closed_at_the_head_deadline(server):
    with open_socket(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert HEAD_TIMEOUT * 0.8 < seconds_until_closed(sock) < HEAD_TIMEOUT + 1.5


def test_a_head_trickled_a_byte_at_a_time_is_closed_at_the_same_deadline(server):
    with open_socket(server) as sock:
        assert seconds_until_closed(sock, trickle=b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 400) < HEAD_TIMEOUT + 1.5


def test_a_kept_alive_connection_serves_its_next_request_and_closes_when_idle(server):
    with httpx.Client(base_url=server.url, timeout=10) as client:
        assert client.get("/healthz").status_code == 200
        time.sleep(KEEP_ALIVE / 2)
        assert client.get("/healthz", headers={"Cookie": "a=" + "b" * 30_000}).status_code == 200, "a 30 KB head is fine"
    with open_socket(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert KEEP_ALIVE * 0.8 < seconds_until_closed(sock) < KEEP_ALIVE + 1.5


def refusal(sock: socket.socket, stream: Iterator[bytes]) -> tuple[bytes, int]:
    """Send `stream` until the server answers; its answer and how many bytes it had been sent."""
    sent = 0
    for chunk in stream:
        if select.select([sock], [], [], 0.05)[0]:
            break
        try:
            sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(chunk)
    sock.settimeout(10)
    return sock.recv(65536), sent


def test_a_100_mb_header_is_refused_after_its_first_kilobytes(server):
    def head() -> Iterator[bytes]:
        yield b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Huge: "
        for _ in range(100 * 16):
            yield b"a" * 65536

    with open_socket(server) as sock:
        answer, sent = refusal(sock, head())
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert answer.endswith(b"request head larger than 65536 bytes")
    assert sent < 1024 * 1024


def test_a_head_of_too_many_header_fields_is_refused(server):
    fields = b"".join(b"X-Field-%d: 1\r\n" % number for number in range(101))
    with open_socket(server) as sock:
        answer, _ = refusal(sock, iter([b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + b"\r\n"]))
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert answer.endswith(b"more than 100 header fields")
