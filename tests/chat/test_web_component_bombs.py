"""A stored web component costs the server a bounded amount of work (docs/widgets.md, "Limits"):
decoded once per stored version, never beyond CHAT_WIDGET_SCRIPT_MAX_BYTES, never for a 304.
Against a real server process, whose memory and metrics are read from outside."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.bombs import GIGABYTE, gzip_bomb, rss
from tests.conftest import bearer_token
from tests.servers import ServerProcess, asgi_server, manage, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

LIMIT = 5 * 1024 * 1024  # the default CHAT_WIDGET_SCRIPT_MAX_BYTES
# Three fetches at once may each decode up to the limit; anything near the bomb's size is far beyond.
RSS_GROWTH_BOUND = 64 * 1024 * 1024


def decodes(server: ServerProcess, outcome: str) -> float:
    admin = {"Authorization": f"Bearer {bearer_token('bomb-admin', admin=True)}"}
    text = httpx.get(f"{server.url}/metrics", headers=admin, timeout=10).text
    match = re.search(rf'^chat_widget_script_decodes_total{{outcome="{outcome}"}} (\S+)$', text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path) -> Iterator[tuple[ServerProcess, dict[str, str], Path]]:
    folder = tmp_path_factory.mktemp("bombs")
    env = sqlite_env(migrated_copy(migrated_sqlite, folder))
    bomb = folder / "bomb.js.gz"
    bomb.write_bytes(gzip_bomb(GIGABYTE))
    # Whoever can write the store (an S3 bucket's writers, in `s3` mode) can put any bytes there:
    # the storage API, not store_put, which refuses the bomb (below).
    manage(
        env,
        "shell",
        "-c",
        "from django.core.files.base import ContentFile; from django.core.files.storage import storages; "
        f"storages['widget_store'].save('widgets/bomb.js.gz', ContentFile(open({str(bomb)!r}, 'rb').read()))",
    )
    with asgi_server(env) as server:
        admin = {"Authorization": f"Bearer {bearer_token('bomb-admin', admin=True)}"}
        for tag, component in (
            ("bomb", {"storeBucket": "widgets", "storeKey": "bomb.js.gz", "encoding": "gzip"}),
            ("card", {"storeBucket": "widgets", "storeKey": "card.js.gz", "encoding": "gzip"}),
        ):
            definition = {
                "scope": "store",
                "tag": tag,
                "usageMode": "global",
                "status": "enabled",
                "widget": {"type": "web-component", "webComponent": component},
                "renderingContexts": {"inline": True},
                "canBeGeneratedByLlm": False,
                "canBeGeneratedByTool": False,
                "description": f"the {tag} component",
            }
            httpx.post(
                f"{server.url}/api/chat-admin/tagdef", json={"tagDefinition": definition}, headers=admin, timeout=30
            ).raise_for_status()
        yield server, env, folder


def fetch(server: ServerProcess, user_id: str, tag: str, etag: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer_token(user_id)}"}
    if etag:
        headers["If-None-Match"] = etag
    return httpx.get(f"{server.url}/api/chat/webcomponent/store/{tag}", headers=headers, timeout=60)


def test_the_gigabyte_gzip_bomb_fetched_by_three_users_at_once_stays_within_the_memory_bound(platform):
    server, _, _ = platform
    fetch(server, "warm-up", "nothing")  # the request path loaded once, so its imports are not counted
    before = rss(server.pid)

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda user: fetch(server, user, "bomb"), ["alice", "bob", "carol"]))

    peak_growth = rss(server.pid, "VmHWM") - before
    assert peak_growth < RSS_GROWTH_BOUND, f"peak RSS grew by {peak_growth / 2**20:.0f} MB"
    for answer in answers:
        body = answer.json()
        assert answer.status_code == 502, body
        assert body["code"] == "INTERNAL_ERROR"
        assert f"more than {LIMIT} bytes (CHAT_WIDGET_SCRIPT_MAX_BYTES)" in body["error"]
    refused = decodes(server, "refused")
    assert 1 <= refused <= 3  # three requests at once may each have found nothing cached yet

    for user in ("alice", "bob", "carol"):
        assert fetch(server, user, "bomb").status_code == 502
    assert decodes(server, "refused") == refused, "the refusal is kept per stored version: no decoding again"


def test_a_script_is_decoded_once_per_stored_version_and_never_for_a_304(platform, tmp_path):
    server, env, _ = platform
    script = tmp_path / "card.js"
    script.write_text("customElements.define('store-card', class extends HTMLElement {});\n" + "// padding\n" * 20_000)
    manage(env, "store_put", "widgets", "card.js.gz", str(script), "--encode", "gzip")
    decoded_before = decodes(server, "ok")

    first = fetch(server, "alice", "card")
    assert first.status_code == 200 and first.text == script.read_text()
    etag = first.headers["ETag"]
    with ThreadPoolExecutor(3) as pool:
        revalidated = list(pool.map(lambda user: fetch(server, user, "card", etag), ["alice", "bob", "carol"]))
    assert [answer.status_code for answer in revalidated] == [304, 304, 304]
    assert fetch(server, "dave", "card").text == script.read_text()  # a 200 from the cache
    assert decodes(server, "ok") == decoded_before + 1

    script.write_text("customElements.define('store-card', class extends HTMLElement {}); // v2\n")
    manage(env, "store_put", "widgets", "card.js.gz", str(script), "--encode", "gzip")
    replaced = fetch(server, "alice", "card", etag)
    assert replaced.status_code == 200 and replaced.text.endswith("// v2\n")
    assert replaced.headers["ETag"] != etag
    assert decodes(server, "ok") == decoded_before + 2


def test_store_put_refuses_the_bomb_before_storing_it(platform):
    _, env, folder = platform
    with pytest.raises(Exception) as refused:
        manage(env, "store_put", "widgets", "bomb-again.js.gz", str(folder / "bomb.js.gz"))
    assert f"more than {LIMIT} bytes (CHAT_WIDGET_SCRIPT_MAX_BYTES)" in refused.value.stderr
    assert "bomb-again" not in manage(env, "store_put", "widgets", "--list")
