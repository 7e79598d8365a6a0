"""Real peers on loopback that tests talk to instead of mocks (STYLE.md: "prefer a real peer").

`openai_server` is a pytest fixture: a scripted model server, with the settings `OPENAI_BASE_URL`
and `ANTHROPIC_BASE_URL` pointing at it (and the variables of the same names, for the processes a
test starts) and the model cache of chatplatform.llm cleared, so any
`openai:<name>` or `anthropic:<name>` model of the code under test talks to it. Register it in your folder's conftest.py:

    from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)

and use it in tests:

    def test_x(openai_server):
        openai_server.script([Reply(text="Hello there")])
        ...
        assert openai_server.requests[0]["messages"][0] == {"role": "system", "content": "..."}
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator

import pytest
from pytest_django import Settings

from chatplatform import llm
from tests.peers.openai_server import OpenAIServer, Reply, ToolCall

__all__ = ["OpenAIServer", "Reply", "ToolCall", "openai_server", "shared_openai_server"]

_shared: OpenAIServer | None = None
_shared_lock = threading.Lock()


def shared_openai_server() -> OpenAIServer:
    """One server per test process, started on first use: starting and stopping per test costs ~0.3 s."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = OpenAIServer().start()
            atexit.register(_shared.stop)
        return _shared


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Iterator[OpenAIServer]:
    """The scripted model server, empty, with `openai:` models pointed at it for this test."""
    server = shared_openai_server()
    server.reset()
    variables = {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1"),
        "ANTHROPIC_API_KEY": "test-key",
    }
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
        setattr(settings, name, value)
    llm.clear_model_cache()  # cached models keep the base URL they were built with
    yield server
    server.reset()
    llm.clear_model_cache()
