"""/metrics with two server processes (docs/deploy.md): with PROMETHEUS_MULTIPROC_DIR, whichever
process answers the scrape counts the requests both answered."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.servers import asgi_server, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _healthz_answers(text: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "chat_http_requests_total" and sample.labels == {"endpoint": "page", "method": "GET", "status": "200"}
    )


def test_every_process_scrapes_the_requests_of_all(migrated_sqlite, tmp_path):
    folder = tmp_path / "prometheus"
    folder.mkdir()
    env = sqlite_env(migrated_copy(migrated_sqlite, tmp_path), PROMETHEUS_MULTIPROC_DIR=str(folder), CHAT_METRICS_TOKEN="scrape")
    with asgi_server(env, workers=2) as server:
        for _ in range(40):  # new connections: the two processes share them
            assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        scrapes = [httpx.get(f"{server.url}/metrics", headers={"Authorization": "Bearer scrape"}, timeout=10).text for _ in range(6)]
    # A scrape is a GET of a page too: each one counts the 40 and the scrapes before it, whichever process answered them.
    assert [_healthz_answers(text) for text in scrapes] == [40.0, 41.0, 42.0, 43.0, 44.0, 45.0]
    # prometheus-client names its files <kind>_<pid>.db
    assert len({path.stem.rsplit("_", 1)[-1] for path in folder.glob("counter_*.db")}) == 2, "both processes counted"
