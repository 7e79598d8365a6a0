"""Calling converse the ways clients do, and reading SSE streams."""

from __future__ import annotations

import json
from typing import Any

from chat.turn import wait_for_running_turns


def body(**overrides: Any) -> dict[str, Any]:
    """A valid converse body for the `app` fixture; a None override removes the key."""
    data: dict[str, Any] = {"chatAppId": "support", "agentId": "helper", "message": "Hello there", "features": {}, "source": "user"}
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


async def converse(client: Any, **overrides: Any) -> Any:
    response = await client.post("/api/chat/converse", body(**overrides), content_type="application/json")
    await wait_for_running_turns()  # the title step may still be running after `done`
    return response


def parse_sse(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip() or block.startswith(":"):
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        events.append((lines["event"], json.loads(lines["data"])))
    return events


async def read_stream(response: Any) -> bytes:
    chunks = [chunk async for chunk in response.streaming_content]
    return b"".join(chunks)


async def converse_sse(client: Any, **overrides: Any) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    response = await client.post(
        "/api/chat/converse", body(**overrides), content_type="application/json", headers={"Accept": "text/event-stream"}
    )
    if not response.streaming:
        return response, []
    events = parse_sse(await read_stream(response))
    await wait_for_running_turns()
    return response, events
