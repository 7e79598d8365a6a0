"""Peers for the tool execution tests: the scripted model server and a real MCP server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.peers import openai_server  # noqa: F401  (a pytest fixture, registered by importing it here)
from tests.peers.mcp_server import McpPeer, shared_mcp_peer
from tests.tools_exec.support import REGION


@pytest.fixture
def mcp_peer() -> Iterator[McpPeer]:
    """The MCP server with its token endpoint, every token revoked and counters at zero."""
    peer = shared_mcp_peer()
    peer.reset()
    yield peer
    peer.reset()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # Without Docker, moto does not run the code: an invocation answers the next queued result,
    # else echoes the payload it received.
    with mock_aws(config={"lambda": {"use_docker": False}}):
        yield boto3.client("lambda", region_name=REGION)
