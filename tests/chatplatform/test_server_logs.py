"""No token in a log (docs/deploy.md "Logs"): a server that logs everything (uvicorn at info with its
access log, the platform at DEBUG) writes a `?token=` of a WebSocket or an HTTP request as [redacted]."""

from __future__ import annotations

import httpx
import pytest
from websockets.sync.client import connect

from tests.servers import asgi_server, manage, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def test_tokens_in_query_strings_never_reach_the_servers_log(migrated_sqlite, tmp_path):
    env = sqlite_env(migrated_copy(migrated_sqlite, tmp_path), LOG_LEVEL="DEBUG")
    token = manage(env, "issue_token", "log-reader").strip()
    with asgi_server(env, options=["--log-level", "info"]) as server:
        with connect(f"ws://127.0.0.1:{server.port}/ws/chat/converse?token={token}", open_timeout=30) as socket:
            socket.ping().wait(10)
        answer = httpx.get(f"{server.url}/api/chat/user?token={token}", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert answer.status_code == 200
        assert httpx.get(f"{server.url}/no/such/page?access_token={token}&x=1", timeout=30).status_code == 404
        log = server.log()

    assert token not in log
    assert token.split(".")[2] not in log, "nor its signature alone"
    assert "/ws/chat/converse?token=[redacted]" in log, log
    assert "/api/chat/user?token=[redacted]" in log
    assert "/no/such/page?access_token=[redacted]&x=1" in log
