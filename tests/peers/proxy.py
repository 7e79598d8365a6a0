"""An HTTP proxy on loopback that tunnels CONNECT requests, as a corporate proxy does for HTTPS.

`routes` maps host names only the proxy can resolve to loopback addresses, so a server behind
such a name is reachable through the proxy alone. Every CONNECT target is recorded in `tunnels`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping


class ConnectProxy:
    def __init__(self, routes: Mapping[str, tuple[str, int]] | None = None) -> None:
        self.routes = dict(routes or {})
        self.tunnels: list[str] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="connect-proxy", daemon=True)
        self._server: asyncio.Server | None = None

    def start(self) -> ConnectProxy:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._client, "127.0.0.1", 0), self._loop).result(5)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            if method != "CONNECT":
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
                return
            self.tunnels.append(target)
            host, _, port = target.rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.routes.get(host, (host, int(port))))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()
