"""Outbound HTTP of model providers: one aiohttp session per event loop.

aiohttp rather than httpx: a streamed answer is one small chunk per token, and aiohttp's C
parser reads it at a fraction of httpx's CPU (docs/decisions.md). Sessions honour the standard
environment: HTTPS_PROXY, HTTP_PROXY and NO_PROXY (`trust_env`), SSL_CERT_FILE and
SSL_CERT_DIR (OpenSSL's default verify paths). Only connecting is bounded here (10 s); how long
an answer may take to start and to keep coming is the tool loop's (chatplatform.llm.loop).
"""

from __future__ import annotations

import asyncio
import weakref

import aiohttp

CONNECT_TIMEOUT = 10.0

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
            trust_env=True,
        )
    return current


async def close() -> None:
    """Close the running loop's session (tests, shutdown)."""
    current = _sessions.pop(asyncio.get_running_loop(), None)
    if current is not None:
        await current.close()
