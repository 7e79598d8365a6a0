"""A real MCP server on loopback, behind a bearer check, with its own OAuth token endpoint.

The server is an `MCPServer` from the official `mcp` package served over Streamable HTTP by
uvicorn on its own event loop in a daemon thread, so the platform's MCP client talks to the same
code a production server runs. The same port serves a tiny OAuth 2.0 token endpoint
(`client_credentials` only) that counts the tokens it issues; `rotate_tokens()` makes every
issued token invalid (the next call gets 401), `token_lifetime` sets `expires_in` of the next
tokens, and `require_token=False` turns the bearer check off.

    with McpPeer() as peer:
        peer.url          # http://127.0.0.1:<port>/mcp
        peer.token_url    # http://127.0.0.1:<port>/oauth/token
        peer.tokens_issued, peer.calls

Tools: `add(a, b)`, `slow(seconds)`, `whoami()` (the bearer token the server saw), `fail(message)`
(an MCP tool error), `event()` (the `_meta` the client sent), `big(size)` (a string of `size` bytes).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from tests.peers.threaded import ThreadedServer

__all__ = ["McpPeer", "shared_mcp_peer"]

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

CLIENT_ID = "chat-platform"
CLIENT_SECRET = "peer-secret"


@dataclass(frozen=True)
class RecordedCall:
    """One tools/call the server answered: the tool, its arguments and the bearer token it carried."""

    tool: str
    arguments: dict[str, Any]
    token: str | None
    traceparent: str = ""  # the W3C trace context the call carried


class McpPeer:
    """The server; a context manager. Attributes are safe to read from the test's thread."""

    def __init__(self, *, require_token: bool = True, token_lifetime: float = 3600) -> None:
        self.require_token = require_token
        self.token_lifetime = token_lifetime
        self.client_id = CLIENT_ID
        self.client_secret = CLIENT_SECRET
        self._lock = threading.Lock()
        self._valid: dict[str, float] = {}  # token -> expiry (monotonic)
        self._counter = itertools.count(1)
        self.tokens_issued = 0
        self.unauthorized = 0  # MCP requests answered 401
        self._calls: list[RecordedCall] = []
        self._serving: ThreadedServer | None = None
        self.port = 0
        self._mcp_app = self._build_mcp().streamable_http_app()

    # --- state (test thread) --------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def token_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/oauth/token"

    @property
    def calls(self) -> list[RecordedCall]:
        with self._lock:
            return list(self._calls)

    def auth(self) -> dict[str, str]:
        """The `auth` object of an `mcp` tool definition that obtains tokens from this peer."""
        return {"clientId": self.client_id, "clientSecret": self.client_secret, "tokenUrl": self.token_url}

    def rotate_tokens(self) -> None:
        """Every token issued so far stops being accepted, as after a key rotation on the server."""
        with self._lock:
            self._valid.clear()

    def reset(self) -> None:
        with self._lock:
            self._valid.clear()
            self._calls.clear()
            self.tokens_issued = 0
            self.unauthorized = 0
        self.require_token = True
        self.token_lifetime = 3600

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> McpPeer:
        # Graceful stop first, so the MCP app's lifespan shuts its session manager down.
        self._serving = ThreadedServer(self._app, name="mcp-peer", lifespan="on", graceful=2)
        self.port = self._serving.start()
        return self

    def stop(self) -> None:
        if self._serving is not None:
            self._serving.stop()
            self._serving = None

    def __enter__(self) -> McpPeer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- the MCP server -------------------------------------------------------------------------

    def _record(self, tool: str, arguments: dict[str, Any], ctx: Context) -> None:
        authorization = (ctx.headers or {}).get("authorization", "")
        token = authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None
        traceparent = (ctx.headers or {}).get("traceparent", "")
        with self._lock:
            self._calls.append(RecordedCall(tool, arguments, token, traceparent))

    def _build_mcp(self) -> MCPServer:
        server = MCPServer("test-peer")

        @server.tool(description="Adds two numbers.")
        def add(a: float, b: float, ctx: Context) -> float:
            self._record("add", {"a": a, "b": b}, ctx)
            return a + b

        @server.tool(description="Answers after `seconds`.")
        async def slow(seconds: float, ctx: Context) -> str:
            self._record("slow", {"seconds": seconds}, ctx)
            await asyncio.sleep(seconds)
            return f"slept {seconds}"

        @server.tool(description="The bearer token this request carried.")
        def whoami(ctx: Context) -> str:
            self._record("whoami", {}, ctx)
            authorization = (ctx.headers or {}).get("authorization", "")
            return authorization.removeprefix("Bearer ")

        @server.tool(description="Always fails with `message`.")
        def fail(message: str, ctx: Context) -> str:
            self._record("fail", {"message": message}, ctx)
            raise ToolError(message)

        @server.tool(description="The `_meta` object of this request.")
        def event(ctx: Context) -> dict[str, Any]:
            self._record("event", {}, ctx)
            return dict(ctx.request_context.meta or {})

        @server.tool(description="A string of `size` bytes.")
        def big(size: int, ctx: Context) -> str:
            self._record("big", {"size": size}, ctx)
            return "x" * size

        return server

    # --- HTTP: token endpoint, bearer check, MCP ------------------------------------------------

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._mcp_app(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        if scope["path"] == "/oauth/token":
            await self._token(scope, receive, send)
            return
        if self.require_token and not self._authorized(scope):
            with self._lock:
                self.unauthorized += 1
            await _drain(receive)
            body = b'{"error": "invalid_token"}'
            headers = [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer error="invalid_token"'),
                (b"content-length", str(len(body)).encode()),
            ]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self._mcp_app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        authorization = _header(scope, "authorization")
        if not authorization.startswith("Bearer "):
            return False
        token = authorization.removeprefix("Bearer ")
        with self._lock:
            expiry = self._valid.get(token)
        return expiry is not None and time.monotonic() < expiry

    async def _token(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = await _drain(receive)
        form = {key: values[0] for key, values in parse_qs(body.decode()).items()}
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        basic = _header(scope, "authorization")
        if basic.startswith("Basic "):
            client_id, _, client_secret = base64.b64decode(basic.removeprefix("Basic ")).decode().partition(":")
        if scope["method"] != "POST" or form.get("grant_type") != "client_credentials":
            await _json(send, 400, {"error": "unsupported_grant_type"})
            return
        if client_id != self.client_id or client_secret != self.client_secret:
            await _json(send, 401, {"error": "invalid_client"})
            return
        token = f"token-{next(self._counter)}-{secrets.token_hex(4)}"
        with self._lock:
            lifetime = self.token_lifetime
            self._valid[token] = time.monotonic() + lifetime
            self.tokens_issued += 1
        await _json(send, 200, {"access_token": token, "token_type": "Bearer", "expires_in": lifetime})


def _header(scope: Scope, name: str) -> str:
    wanted = name.encode()
    for key, value in scope["headers"]:
        if key.lower() == wanted:
            return value.decode("latin-1")
    return ""


async def _drain(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


_shared: McpPeer | None = None
_shared_lock = threading.Lock()


def shared_mcp_peer() -> McpPeer:
    """One peer per test process, started on first use (starting one costs a few hundred ms).

    It is never stopped: its daemon thread ends with the process. Stopping it at exit would run
    the MCP app's lifespan shutdown, which logs through handlers pytest has already closed.
    """
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = McpPeer().start()
        return _shared


def main(argv: list[str] | None = None) -> None:
    """Serve the peer in its own process (benchmarks: the client under test keeps its CPU).

    `python -m tests.peers.mcp_server [--no-auth]` prints one JSON line {url, tokenUrl, clientId,
    clientSecret} and serves until interrupted.
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--no-auth", action="store_true", help="serve MCP without the bearer check")
    options = parser.parse_args(argv)
    with McpPeer(require_token=not options.no_auth) as peer:
        print(json.dumps({"url": peer.url, **peer.auth()}), flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
