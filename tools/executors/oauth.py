"""OAuth 2.0 client-credentials tokens for `mcp` tools with `auth` (docs/api.md, "Tools").

A token is fetched with one POST to the tool's `tokenUrl` and kept in the shared Django cache
until shortly before it expires, so every process (server workers, background worker) reuses it;
a process-local copy in front of the cache keeps the warm path free of cache round trips.
The cache key covers the tool id and the client id, and a hash of the token URL and secret, so
editing the tool's credentials never serves a token obtained with the old ones. Concurrent calls
of one process that find no usable token wait for a single fetch. The tool's stored
`auth.token` is not written: the shared cache already gives every process the same token, and a
database write per refresh would buy nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2
from django.core.cache import cache

from tools.executors import ToolError, loop_local

_REFRESH_MARGIN_SECONDS = 30.0  # refresh this long before `expires_in` runs out (at most half the lifetime)
_DEFAULT_LIFETIME_SECONDS = 300.0  # when the server sends no `expires_in`
_NO_AUTH = httpx2.Auth()  # token requests must not go through the MCP bearer flow of the shared client


@dataclass(frozen=True)
class _Token:
    access_token: str
    expires: float  # Unix seconds, as a definition's auth.token {accessToken, expires}
    refresh_at: float

    def usable(self, stale: str | None) -> bool:
        return self.access_token != stale and time.time() < self.refresh_at


_memo: dict[str, _Token] = {}
_locks: dict[asyncio.AbstractEventLoop, dict[str, asyncio.Lock]] = {}


def cache_key(tool_id: str, auth: Mapping[str, Any]) -> str:
    secret = hashlib.sha256(f"{auth.get('tokenUrl')}\0{auth.get('clientSecret')}".encode()).hexdigest()[:16]
    identity = hashlib.sha256(f"{tool_id}\0{auth.get('clientId')}".encode()).hexdigest()[:24]
    return f"tools:mcp-token:{identity}:{secret}"


def _lock(key: str) -> asyncio.Lock:
    locks = loop_local(_locks, dict)
    lock = locks.get(key)
    if lock is None:
        lock = locks[key] = asyncio.Lock()
    return lock


def _from_cache(value: Any) -> _Token | None:
    if not isinstance(value, dict):  # absent, or written by another version: a miss
        return None
    try:
        return _Token(str(value["accessToken"]), float(value["expires"]), float(value["refreshAt"]))
    except (KeyError, TypeError, ValueError):
        return None


async def access_token(*, tool_id: str, auth: Mapping[str, Any], http: httpx2.AsyncClient, stale: str | None = None) -> str:
    """A bearer token for the tool; a new one when the known one is `stale` (the server refused it).

    ToolError when the token endpoint does not give one.
    """
    key = cache_key(tool_id, auth)
    token = _memo.get(key)
    if token is not None and token.usable(stale):
        return token.access_token
    async with _lock(key):
        token = _memo.get(key)  # another call of this process may have fetched one meanwhile
        if token is None or not token.usable(stale):
            token = _from_cache(await cache.aget(key))  # or another process
            if token is None or not token.usable(stale):
                token = await _fetch(auth, http)
                value = {"accessToken": token.access_token, "expires": token.expires, "refreshAt": token.refresh_at}
                await cache.aset(key, value, timeout=max(1, math.ceil(token.refresh_at - time.time())))
            _memo[key] = token
    return token.access_token


def forget_tokens() -> None:
    """Drop this process's copies (the shared cache is left alone); for tests and credential rotation."""
    _memo.clear()


async def _fetch(auth: Mapping[str, Any], http: httpx2.AsyncClient) -> _Token:
    url = str(auth.get("tokenUrl") or "")
    client_id, secret = str(auth.get("clientId") or ""), str(auth.get("clientSecret") or "")
    form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
    try:
        started = time.time()
        response = await http.post(url, data=form, headers={"accept": "application/json"}, auth=_NO_AUTH)
        if response.status_code in (400, 401) and _error_code(response) == "invalid_client":
            # RFC 6749, section 2.3.1: servers must accept HTTP Basic, the body form is optional; try Basic once.
            response = await http.post(
                url,
                data={"grant_type": "client_credentials"},
                headers={"accept": "application/json"},
                auth=httpx2.BasicAuth(client_id, secret),
            )
    except httpx2.HTTPError as exc:
        raise ToolError(f"could not obtain an access token from the tool's tokenUrl ({type(exc).__name__}: {exc})") from exc
    if response.status_code != 200:
        detail = _error_code(response) or response.reason_phrase
        raise ToolError(f"the tool's tokenUrl refused to issue an access token (HTTP {response.status_code} {detail})")
    try:
        body = response.json()
        access = body["access_token"]
        if not isinstance(access, str) or not access:
            raise ValueError("access_token is empty")
        lifetime = float(body.get("expires_in") or _DEFAULT_LIFETIME_SECONDS)
    except (ValueError, KeyError, TypeError) as exc:
        raise ToolError(f"the tool's tokenUrl answered without a usable access_token ({exc})") from exc
    margin = min(_REFRESH_MARGIN_SECONDS, lifetime / 2)
    return _Token(access, started + lifetime, started + lifetime - margin)


def _error_code(response: httpx2.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else None
