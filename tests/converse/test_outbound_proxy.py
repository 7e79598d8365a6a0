"""Model calls honour the standard proxy and certificate variables (HTTPS_PROXY, NO_PROXY, SSL_CERT_FILE):
a platform process whose model is reachable only through a proxy on loopback still answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import bearer_token
from tests.peers import OpenAIServer, Reply
from tests.peers.proxy import ConnectProxy
from tests.peers.tls import Certificates, make_certificates
from tests.servers import ServerProcess, asgi_server, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(scope="module")
def model_behind_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OpenAIServer, ConnectProxy, Certificates]]:
    """A model server over TLS with a certificate of the test's own CA, and a proxy that alone
    knows the server's name (`model.internal`)."""
    certificates = make_certificates(tmp_path_factory.mktemp("tls"), ["model.internal", "127.0.0.1"])
    model = OpenAIServer().start(certfile=str(certificates.cert_file), keyfile=str(certificates.key_file))
    proxy = ConnectProxy({"model.internal": ("127.0.0.1", model.port)}).start()
    yield model, proxy, certificates
    proxy.stop()
    model.stop()


def _admin(server: ServerProcess, path: str, payload: dict[str, Any]) -> None:
    headers = {"Authorization": f"Bearer {bearer_token('ops', admin=True)}"}
    response = httpx.post(f"{server.url}{path}", json=payload, headers=headers, timeout=10)
    assert response.status_code == 200, response.text


def _converse(server: ServerProcess) -> httpx.Response:
    _admin(
        server,
        "/api/chat-admin/agent",
        {"agent": {"agentId": "remote", "basePrompt": "Be brief.", "toolIds": [], "foundationModel": "openai:remote-model"}},
    )
    _admin(server, "/api/chat-admin/chat-app", {"chatApp": {"chatAppId": "remote-app", "title": "Remote", "agentId": "remote"}})
    body = {"chatAppId": "remote-app", "agentId": "remote", "message": "Hello?", "features": {}, "source": "user"}
    return httpx.post(
        f"{server.url}/api/chat/converse", json=body, headers={"Authorization": f"Bearer {bearer_token('alice')}"}, timeout=30
    )


def test_a_model_reachable_only_through_the_https_proxy_answers_turns(model_behind_proxy, migrated_sqlite, tmp_path):
    model, proxy, certificates = model_behind_proxy
    model.script([Reply(text="Through the proxy.")])
    env = sqlite_env(
        migrated_copy(migrated_sqlite, tmp_path),
        OPENAI_BASE_URL="https://model.internal/v1",
        OPENAI_API_KEY="test-key",
        HTTPS_PROXY=proxy.url,
        NO_PROXY="",
        SSL_CERT_FILE=str(certificates.ca_file),
    )
    tunnels_before = len(proxy.tunnels)
    with asgi_server(env) as server:
        response = _converse(server)

    assert response.status_code == 200, response.text
    assert response.json()["response"] == "Through the proxy."
    assert proxy.tunnels[tunnels_before:] == ["model.internal:443"]


def test_a_host_in_no_proxy_is_reached_directly(model_behind_proxy, migrated_sqlite, tmp_path):
    model, proxy, certificates = model_behind_proxy
    model.script([Reply(text="Straight there.")])
    env = sqlite_env(
        migrated_copy(migrated_sqlite, tmp_path),
        OPENAI_BASE_URL=f"https://127.0.0.1:{model.port}/v1",
        OPENAI_API_KEY="test-key",
        HTTPS_PROXY=proxy.url,
        NO_PROXY="localhost,127.0.0.1",
        SSL_CERT_FILE=str(certificates.ca_file),
    )
    tunnels_before = len(proxy.tunnels)
    with asgi_server(env) as server:
        response = _converse(server)

    assert response.status_code == 200, response.text
    assert response.json()["response"] == "Straight there."
    assert proxy.tunnels[tunnels_before:] == []
