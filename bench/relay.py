"""The floor of bench/converse.py's stack: a bare ASGI app that relays the model's stream.

It reads the same scripted model server with the platform's own HTTP client session
(`chatplatform.llm.http`, aiohttp) and writes each chunk to the caller through the same uvicorn,
with no Django, no database and no turn. Its CPU per stream is what any turn on this stack pays
on this machine at this moment: bench/converse.py prints it beside the platform's.

    uvicorn bench.relay:app   (MODEL_URL=<the model server's base URL>)
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from chatplatform.llm import http

BODY = json.dumps({"model": "bench", "stream": True, "messages": [{"role": "user", "content": "Tell me something."}]}).encode()


async def app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    if scope["type"] != "http":
        return
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    url = f"{os.environ['MODEL_URL']}/chat/completions"
    async with http.session().post(url, data=BODY, headers={"Content-Type": "application/json"}, proxy=http.proxy_for(url)) as response:
        async for chunk in response.content.iter_any():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
