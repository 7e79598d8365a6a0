"""A test client that sends requests through the whole ASGI application (`chatplatform.asgi`), as
uvicorn does, so that what serves a request in production serves it in the test: the doors by the
fast path in front of Django's handler (chatplatform.fastpath), Django for everything else.

It answers like Django's test client where the tests need it (`status_code`, `json()`,
`response["Header"]`, `streaming`, `streaming_content`); leaving `streaming_content` early sends
`http.disconnect`, as a client that goes away does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from asgiref.testing import ApplicationCommunicator

from chatplatform.asgi import application

TIMEOUT = 30.0


class AsgiResponse:
    def __init__(self, communicator: ApplicationCommunicator, start: dict[str, Any]) -> None:
        self._communicator = communicator
        self.status_code: int = start["status"]
        self.headers = {name.decode("latin1").lower(): value.decode("latin1") for name, value in start.get("headers", [])}
        self.streaming = self.headers.get("content-type", "").startswith("text/event-stream")
        self.content = b""
        self._ended = False

    def __getitem__(self, name: str) -> str:
        return self.headers[name.lower()]

    def has_header(self, name: str) -> bool:
        return name.lower() in self.headers

    def json(self) -> Any:
        return json.loads(self.content)

    async def _next_chunk(self) -> bytes | None:
        if self._ended:
            return None
        message = await self._communicator.receive_output(TIMEOUT)
        assert message["type"] == "http.response.body", message
        self._ended = not message.get("more_body", False)
        if self._ended:
            await self._finished()
        return message.get("body", b"")

    async def _finished(self) -> None:
        """Let the application run to its end, as a server does: Django closes the request's
        database connection after the body is sent, and a communicator dropped sooner cancels that."""
        await self._communicator.wait(TIMEOUT)

    async def read(self) -> bytes:
        while (chunk := await self._next_chunk()) is not None:
            self.content += chunk
        return self.content

    @property
    def streaming_content(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        try:
            while (chunk := await self._next_chunk()) is not None:
                if chunk:
                    yield chunk
        finally:
            if not self._ended:  # the client leaves mid-stream
                await self._communicator.send_input({"type": "http.disconnect"})
                await self._finished()


class AsgiClient:
    """`await AsgiClient(AUTHORIZATION="Bearer …").post(path, data, content_type=…, headers=…)`."""

    def __init__(self, **default_headers: str) -> None:
        self.default_headers = {name.lower().replace("_", "-"): value for name, value in default_headers.items()}

    async def post(
        self, path: str, data: Any = None, content_type: str = "application/json", headers: dict[str, str] | None = None
    ) -> AsgiResponse:
        body = data if isinstance(data, bytes) else json.dumps(data).encode() if data is not None else b""
        return await self.request("POST", path, body=body, headers={"content-type": content_type, **(headers or {})})

    async def request(self, method: str, path: str, *, body: bytes = b"", headers: dict[str, str] | None = None) -> AsgiResponse:
        all_headers = {"host": "testserver", **self.default_headers, **{k.lower(): v for k, v in (headers or {}).items()}}
        all_headers["content-length"] = str(len(body))
        path, _, query = path.partition("?")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(name.encode("latin1"), value.encode("latin1")) for name, value in all_headers.items()],
            "client": ("127.0.0.1", 40000),
            "server": ("testserver", 80),
        }
        communicator = ApplicationCommunicator(application, scope)
        await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
        response = AsgiResponse(communicator, await communicator.receive_output(TIMEOUT))
        if not response.streaming:
            await response.read()
        return response
