"""A document cannot take the server down (docs/deploy.md, "Limits on hostile input"): it is parsed in
a child process with limits on decompressed size, pages, text, memory and time; past one, the
document is `failed` with the reason, while the server goes on answering everyone else."""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from knowledge import ingest
from tests.conftest import bearer_token
from tests.knowledge.conftest import add_text, create_base, documents, upload
from tests.knowledge.pdf import make_pdf, pdf_bomb
from tests.servers import ServerProcess, asgi_server, manage, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

PARSE_SECONDS = 3
ADMIN = {"Authorization": f"Bearer {bearer_token('kb-admin', admin=True)}"}


# --- through the Admin API in this process (the parse runs in its child all the same) ----------------


@pytest.fixture
def base(admin_client):
    return create_base(admin_client)


def test_a_pdf_with_more_pages_than_the_limit_fails_naming_it(admin_client, base, settings):
    settings.CHAT_KB_MAX_PAGES = 2
    response = upload(admin_client, "handbook", "three.pdf", make_pdf(["one", "two", "three"]), "application/pdf")
    document = response.json()["document"]
    assert document["status"] == "failed"
    assert document["error"] == "the PDF has 3 pages, more than 2 (CHAT_KB_MAX_PAGES)"


def test_a_text_longer_than_the_limit_fails_naming_it(admin_client, base, settings):
    settings.CHAT_KB_MAX_TEXT_CHARS = 1000
    document = add_text(admin_client, "handbook", "Long", "word " * 300).json()["document"]
    assert document["status"] == "failed"
    assert document["error"] == "the document's text is more than 1000 characters (CHAT_KB_MAX_TEXT_CHARS)"
    assert add_text(admin_client, "handbook", "Short", "word " * 100).json()["document"]["status"] == "indexed"


def test_the_70_mb_pdf_bomb_fails_at_the_decompression_limit_at_once(admin_client, base):
    started = time.monotonic()
    response = upload(admin_client, "handbook", "bomb.pdf", pdf_bomb(70), "application/pdf")
    document = response.json()["document"]
    assert document["status"] == "failed", document
    assert "CHAT_KB_MAX_DECOMPRESSED_BYTES" in document["error"]
    assert time.monotonic() - started < 10
    assert [d["status"] for d in documents(admin_client, "handbook")] == ["failed"]


def test_a_parse_that_needs_more_memory_than_its_limit_fails_naming_it(admin_client, base, settings):
    settings.CHAT_KB_PARSE_MEMORY_MB = 200
    settings.CHAT_KB_MAX_TEXT_CHARS = 10**9  # so that memory, not the text limit, is what stops it
    settings.CHAT_KB_MAX_DECOMPRESSED_BYTES = 10**9
    document = upload(admin_client, "handbook", "bomb.pdf", pdf_bomb(150), "application/pdf").json()["document"]
    assert document["status"] == "failed", document
    assert document["error"] == "reading the document needed more than 200 MB (CHAT_KB_PARSE_MEMORY_MB)"


def test_the_limits_apply_to_the_extractor_itself():
    limits = ingest.Limits(text_chars=50, pages=1, decompressed_bytes=1 << 20)
    with pytest.raises(ingest.ExtractionError, match="CHAT_KB_MAX_PAGES"):
        ingest.extract(make_pdf(["a", "b"]), "application/pdf", limits)
    with pytest.raises(ingest.ExtractionError, match="CHAT_KB_MAX_TEXT_CHARS"):
        ingest.extract(make_pdf(["x" * 60]), "application/pdf", limits)
    with pytest.raises(ingest.ExtractionError, match="CHAT_KB_MAX_DECOMPRESSED_BYTES"):
        ingest.extract(pdf_bomb(2), "application/pdf", limits)


# --- against a real server process ------------------------------------------------------------------


def _server_env(folder: Path, migrated: Path, **extra: str) -> dict[str, str]:
    env = sqlite_env(migrated_copy(migrated, folder), **{"CHAT_KB_PARSE_SECONDS": str(PARSE_SECONDS), **extra})
    manage(env, "seed_demo")
    return env


def _upload(server: ServerProcess, data: bytes) -> httpx.Response:
    files = {"file": ("bomb.pdf", data, "application/pdf")}
    return httpx.post(f"{server.url}/api/chat-admin/knowledge-base/kb/documents", files=files, headers=ADMIN, timeout=600)


def _turn(server: ServerProcess) -> float:
    body = {"chatAppId": "demo", "agentId": "demo-assistant", "message": "Hello", "features": {}, "source": "user"}
    started = time.perf_counter()
    response = httpx.post(
        f"{server.url}/api/chat/converse", json=body, headers={"Authorization": f"Bearer {bearer_token('reader')}"}, timeout=120
    )
    assert response.status_code == 200, response.text
    return time.perf_counter() - started


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path) -> Iterator[ServerProcess]:
    # Turns run back to back during the attack: the chat rate limit must not be what answers them.
    env = _server_env(tmp_path_factory.mktemp("kb-bombs"), migrated_sqlite, CHAT_RATE_LIMITS='{"chat": 100000}')
    with asgi_server(env) as running:
        base = {"knowledgeBaseId": "kb", "name": "KB", "description": "Uploads."}
        httpx.post(
            f"{running.url}/api/chat-admin/knowledge-base", json={"knowledgeBase": base}, headers=ADMIN, timeout=30
        ).raise_for_status()
        yield running


def test_a_pdf_bomb_fails_its_document_within_the_time_limit_while_turns_keep_their_latency(server):
    # 40 MB of text: under the decompression limit, so only the time limit can stop its extraction
    # (about three minutes of pure Python on this kind of machine).
    bomb = pdf_bomb(40)
    usual = statistics.median(_turn(server) for _ in range(5))
    outcome: dict[str, object] = {}

    def attack() -> None:
        started = time.monotonic()
        outcome["response"] = _upload(server, bomb)
        outcome["seconds"] = time.monotonic() - started

    attacker = threading.Thread(target=attack)
    attacker.start()
    during = []
    while attacker.is_alive():
        during.append(_turn(server))
    attacker.join()

    document = outcome["response"].json()["document"]
    assert document["status"] == "failed", document
    assert document["error"] == f"reading the document took longer than {PARSE_SECONDS} s (CHAT_KB_PARSE_SECONDS)"
    assert outcome["seconds"] < PARSE_SECONDS + 5
    assert len(during) >= 3, during
    assert statistics.median(during) < usual + 0.5, (usual, during)


def test_sigterm_ends_a_server_busy_parsing_within_its_grace(tmp_path, migrated_sqlite):
    env = _server_env(tmp_path, migrated_sqlite, CHAT_KB_PARSE_SECONDS="600", CHAT_SHUTDOWN_GRACE_SECONDS="2")
    with asgi_server(env) as running:
        base = {"knowledgeBaseId": "kb", "name": "KB", "description": "Uploads."}
        httpx.post(
            f"{running.url}/api/chat-admin/knowledge-base", json={"knowledgeBase": base}, headers=ADMIN, timeout=30
        ).raise_for_status()
        answered: dict[str, httpx.Response] = {}
        uploading = threading.Thread(target=lambda: answered.setdefault("response", _upload(running, pdf_bomb(40))))
        uploading.start()
        time.sleep(2)  # the child is parsing by now
        os.kill(running.pid, signal.SIGTERM)
        started = time.monotonic()
        running.process.wait(timeout=30)
        assert time.monotonic() - started < 2 + 5
        uploading.join(timeout=30)
    document = answered["response"].json()["document"]
    assert document["status"] == "failed"
    assert document["error"] == "the document could not be read: the server shut down while it ran"
