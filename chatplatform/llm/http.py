"""Outbound HTTP of model providers: one aiohttp session per event loop.

aiohttp rather than httpx: a streamed answer is one small chunk per token, and aiohttp's C
parser reads it at a fraction of httpx's CPU (docs/decisions.md). Requests honour the standard
environment: HTTPS_PROXY, HTTP_PROXY and NO_PROXY (`proxy_for`), SSL_CERT_FILE and SSL_CERT_DIR
(OpenSSL's default verify paths, read when the process starts). Only connecting is bounded here
(10 s); how long an answer may take to start and to keep coming is the tool loop's.
"""

from __future__ import annotations

import asyncio
import functools
import os
import urllib.request
import weakref
from urllib.parse import urlsplit

import aiohttp

CONNECT_TIMEOUT = 10.0
_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy")

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = weakref.WeakKeyDictionary()


def session() -> aiohttp.ClientSession:
    """The running loop's session (its connections belong to that loop)."""
    loop = asyncio.get_running_loop()
    current = _sessions.get(loop)
    if current is None or current.closed:
        current = _sessions[loop] = aiohttp.ClientSession(
            # No cap on concurrent connections: every streamed turn holds one for its whole answer.
            connector=aiohttp.TCPConnector(limit=0),
            timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT),
        )
    return current


def proxy_for(url: str) -> str | None:
    """The proxy a request to `url` goes through, by the standard variables; None for none.

    Not aiohttp's `trust_env`: it reads the variables and ~/.netrc again for every request, a
    noticeable share of a streamed turn's CPU; here they are read once per host (docs/decisions.md)."""
    parts = urlsplit(url)
    return _proxy(parts.scheme, parts.hostname or "", tuple(os.environ.get(name) for name in _PROXY_VARIABLES))


@functools.lru_cache(maxsize=256)
def _proxy(scheme: str, host: str, environment: tuple[str | None, ...]) -> str | None:
    if urllib.request.proxy_bypass_environment(host):  # type: ignore[attr-defined]  # undocumented: typeshed lacks it
        return None
    proxies = urllib.request.getproxies_environment()
    return proxies.get(scheme) or proxies.get("all")


async def close() -> None:
    """Close the running loop's session (tests, shutdown)."""
    current = _sessions.pop(asyncio.get_running_loop(), None)
    if current is not None:
        await current.close()
