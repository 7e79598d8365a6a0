"""A scripted Amazon Bedrock endpoint on loopback: the Retrieve API of Bedrock knowledge bases
(`POST /knowledgebases/{id}/retrieve`, bedrock-agent-runtime) and InvokeModel of embedding models
(`POST /model/{modelId}/invoke`, bedrock-runtime). moto has neither (its InvokeModel answers an
empty body), so boto3 is pointed here with AWS_ENDPOINT_URL_BEDROCK_AGENT_RUNTIME and
AWS_ENDPOINT_URL_BEDROCK_RUNTIME: the real client signs, serializes and parses the calls.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from tests.peers.openai_server import hashed_vector
from tests.peers.threaded import ThreadedServer


class BedrockServer:
    """`results` is what Retrieve answers (`retrievalResults`); `requests` records every call as
    `{path, headers, body}`; `fail_with` makes every call answer that status."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.results: list[dict[str, Any]] = []
        self.fail_with: int | None = None
        self._requests: list[dict[str, Any]] = []
        self._serving: ThreadedServer | None = None
        self.url = ""

    @property
    def requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._requests)

    def __enter__(self) -> BedrockServer:
        self._serving = ThreadedServer(self._app, name="bedrock-server")
        self.url = f"http://127.0.0.1:{self._serving.start()}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._serving is not None:
            self._serving.stop()

    async def _app(self, scope: Mapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        path = unquote(scope["path"])
        headers = {name.decode().lower(): value.decode() for name, value in scope["headers"]}
        body = json.loads(raw or b"{}")
        with self._lock:
            self._requests.append({"path": path, "headers": headers, "body": body})
        if self.fail_with is not None:
            await _json(send, self.fail_with, {"message": "scripted failure"}, {"x-amzn-errortype": "ThrottlingException"})
        elif path.startswith("/knowledgebases/") and path.endswith("/retrieve"):
            await _json(send, 200, {"retrievalResults": self.results})
        elif path.startswith("/model/") and path.endswith("/invoke"):
            if "texts" in body:
                await _json(send, 200, {"embeddings": [hashed_vector(text, 16) for text in body["texts"]]})
            else:
                await _json(send, 200, {"embedding": hashed_vector(body["inputText"], 16)})
        else:
            await _json(send, 404, {"message": f"no route {path}"})


async def _json(send: Any, status: int, payload: dict[str, Any], extra: Mapping[str, str] | None = None) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(key.encode(), value.encode()) for key, value in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
