"""Web components from the store (docs/api.md, "Widgets"): `GET /api/chat/webcomponent/<scope>/<tag>`
serves the script a tag definition locates with `storeBucket`/`storeKey`, decoded per `encoding`;
`manage.py store_put` is how an operator puts it there."""

from __future__ import annotations

import base64
import gzip
import io
from pathlib import Path

import boto3
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.core.management import CommandError, call_command
from django.test import Client
from moto import mock_aws

from chat.users.models import ChatUser
from chatplatform.storage import encode
from tests.conftest import assert_error

pytestmark = pytest.mark.django_db

SCRIPT = (
    'class DemoCounter extends HTMLElement { connectedCallback() { this.textContent = "0 — zéro"; } }\n'
    'customElements.define("demo-counter", DemoCounter);\n'
)


def define(admin_client, tag: str, web_component: dict) -> None:
    definition = {
        "scope": "demo",
        "tag": tag,
        "usageMode": "global",
        "status": "enabled",
        "widget": {"type": "web-component", "webComponent": web_component},
        "renderingContexts": {"inline": True},
        "canBeGeneratedByLlm": False,
        "canBeGeneratedByTool": False,
        "description": f"The {tag} web component",
    }
    response = admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": definition}, format="json")
    assert response.status_code == 200, response.json()


def store_put(tmp_path: Path, bucket: str, key: str, *, encode: str | None = None, content: str = SCRIPT) -> str:
    source = tmp_path / "script.js"
    source.write_text(content, encoding="utf-8")
    out = io.StringIO()
    call_command("store_put", bucket, key, str(source), *(["--encode", encode] if encode else []), stdout=out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("encoding", "location"),
    [
        ("none", {"storeBucket": "widgets", "storeKey": "demo/plain.js", "encoding": "none"}),
        (None, {"store": {"storeBucket": "widgets", "storeKey": "demo/default.js"}}),  # no encoding: none
        ("gzip", {"storeBucket": "widgets", "storeKey": "demo/counter.js.gz", "encoding": "gzip"}),
        ("gzip+base64", {"store": {"storeBucket": "widgets", "storeKey": "demo/counter.js.b64"}, "encoding": "gzip+base64"}),
    ],
)
def test_a_stored_script_is_served_decoded_per_its_encoding(admin_client, user_client, tmp_path, encoding, location):
    store = location.get("store", location)
    written = store_put(tmp_path, store["storeBucket"], store["storeKey"], encode=encoding)
    assert f"stored widgets/{store['storeKey']}" in written
    define(admin_client, "counter", location)
    response = user_client.get("/api/chat/webcomponent/demo/counter")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    assert response.content.decode("utf-8") == SCRIPT
    assert response["Cache-Control"] == "private, max-age=60"
    assert response["ETag"].startswith('"') and response["ETag"].endswith('"')


def test_the_encoded_bytes_are_what_the_store_holds(tmp_path):
    store_put(tmp_path, "widgets", "demo/a.js.gz", encode="gzip")
    store_put(tmp_path, "widgets", "demo/a.js.b64", encode="gzip+base64")
    with storages["widget_store"].open("widgets/demo/a.js.gz") as stored:
        assert gzip.decompress(stored.read()).decode() == SCRIPT
    with storages["widget_store"].open("widgets/demo/a.js.b64") as stored:
        assert gzip.decompress(base64.b64decode(stored.read())).decode() == SCRIPT


def test_an_object_saved_through_the_storage_api_is_served(admin_client, user_client):
    # Exactly what the platform's code does for any storage: Django's storage API, `widget_store`.
    storages["widget_store"].save("widgets/direct/card.js", ContentFile(gzip.compress(b"export const x = 1;\n")))
    define(admin_client, "card", {"storeBucket": "widgets", "storeKey": "direct/card.js", "encoding": "gzip"})
    assert user_client.get("/api/chat/webcomponent/demo/card").content == b"export const x = 1;\n"


def test_the_store_is_any_django_storage(settings, tmp_path, admin_client, user_client):
    root = tmp_path / "store"
    settings.STORAGES = {
        **settings.STORAGES,
        "widget_store": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": root}},
    }
    store_put(tmp_path, "widgets", "fs/card.js")
    store_put(tmp_path, "widgets", "fs/card.js", content="// replaced\n")  # put again: replaced, not renamed
    assert (root / "widgets" / "fs" / "card.js").read_text() == "// replaced\n"
    define(admin_client, "fs-card", {"storeBucket": "widgets", "storeKey": "fs/card.js"})
    assert user_client.get("/api/chat/webcomponent/demo/fs-card").content == b"// replaced\n"


def test_a_second_put_replaces_the_script_and_its_etag(admin_client, user_client, tmp_path):
    store_put(tmp_path, "widgets", "demo/counter.js")
    define(admin_client, "counter", {"storeBucket": "widgets", "storeKey": "demo/counter.js"})
    first = user_client.get("/api/chat/webcomponent/demo/counter")
    store_put(tmp_path, "widgets", "demo/counter.js", content="// version 2\n")
    second = user_client.get("/api/chat/webcomponent/demo/counter")
    assert second.content == b"// version 2\n"
    assert first["ETag"] != second["ETag"]


def test_the_etag_revalidates_to_304(admin_client, user_client, tmp_path):
    store_put(tmp_path, "widgets", "demo/counter.js")
    define(admin_client, "counter", {"storeBucket": "widgets", "storeKey": "demo/counter.js"})
    etag = user_client.get("/api/chat/webcomponent/demo/counter")["ETag"]
    again = user_client.get("/api/chat/webcomponent/demo/counter", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    assert user_client.get("/api/chat/webcomponent/demo/counter", HTTP_IF_NONE_MATCH='"other"').status_code == 200


def test_the_page_cookie_is_enough(admin_client, tmp_path):
    store_put(tmp_path, "widgets", "demo/counter.js")
    define(admin_client, "counter", {"storeBucket": "widgets", "storeKey": "demo/counter.js"})
    browser = Client()
    browser.force_login(ChatUser.objects.create_user("alice", "correct horse battery"))
    assert browser.get("/api/chat/webcomponent/demo/counter").content.decode() == SCRIPT


def test_anonymous_is_401(anon_client):
    assert_error(anon_client.get("/api/chat/webcomponent/demo/counter"), 401)


def test_an_unknown_tag_is_404(user_client):
    assert_error(user_client.get("/api/chat/webcomponent/demo/nothing"), 404, "NOT_FOUND", mentions="demo.nothing not found")


def test_a_tag_without_a_store_location_is_404(admin_client, user_client):
    define(admin_client, "remote", {"url": "https://widgets.example.com/remote.js"})
    assert_error(
        user_client.get("/api/chat/webcomponent/demo/remote"), 404, "NOT_FOUND", mentions="not a web component located in the store"
    )
    admin_client.post(
        "/api/chat-admin/tagdef",
        {
            "tagDefinition": {
                "scope": "demo",
                "tag": "plain-chart",
                "usageMode": "global",
                "status": "enabled",
                "widget": {"type": "built-in", "builtInType": "chart"},
                "renderingContexts": {"inline": True},
                "canBeGeneratedByLlm": False,
                "canBeGeneratedByTool": False,
                "description": "chart",
            }
        },
        format="json",
    )
    assert_error(user_client.get("/api/chat/webcomponent/demo/plain-chart"), 404, "NOT_FOUND")


def test_a_location_with_nothing_stored_is_404_naming_it(admin_client, user_client):
    define(admin_client, "counter", {"storeBucket": "widgets", "storeKey": "demo/missing.js"})
    assert_error(user_client.get("/api/chat/webcomponent/demo/counter"), 404, "NOT_FOUND", mentions="widgets/demo/missing.js")


@pytest.mark.parametrize(
    ("encoding", "content", "mentions"),
    [
        ("gzip", b"this is not gzip", "not valid gzip"),
        ("gzip+base64", b"%%% not base64 %%%", "not valid base64"),
        ("gzip+base64", base64.b64encode(b"base64 but not gzip"), "not valid gzip"),
        ("gzip", gzip.compress(b"\xff\xfe\x00binary", mtime=0), "not UTF-8"),
        ("none", b"\xff\xfe\x00binary", "not UTF-8"),
    ],
)
def test_content_that_does_not_decode_is_a_clear_502(admin_client, user_client, encoding, content, mentions):
    storages["widget_store"].save("widgets/bad/script.js", ContentFile(content))
    define(admin_client, "broken", {"storeBucket": "widgets", "storeKey": "bad/script.js", "encoding": encoding})
    body = assert_error(user_client.get("/api/chat/webcomponent/demo/broken"), 502, "INTERNAL_ERROR", mentions=mentions)
    assert "Traceback" not in body["error"]


def test_store_put_refuses_a_missing_file_and_a_name_outside_the_store(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("store_put", "widgets", "demo/x.js", str(tmp_path / "absent.js"))
    (tmp_path / "x.js").write_text("x")
    with pytest.raises(CommandError, match="not a usable store name"):
        call_command("store_put", "widgets", "../escape.js", str(tmp_path / "x.js"))
    with pytest.raises(CommandError, match="BUCKET KEY FILE"):
        call_command("store_put", "widgets")


def test_store_put_lists_a_bucket(tmp_path):
    store_put(tmp_path, "widgets", "demo/a.js")
    store_put(tmp_path, "widgets", "demo/deeper/b.js", content="bb")
    store_put(tmp_path, "other", "c.js")
    out = io.StringIO()
    call_command("store_put", "widgets", "--list", stdout=out)
    assert sorted(out.getvalue().splitlines()) == ["widgets/demo/a.js\t" + str(len(SCRIPT.encode())), "widgets/demo/deeper/b.js\t2"]


def test_with_the_s3_store_the_bucket_is_an_s3_bucket(settings, monkeypatch, admin_client, user_client, tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    settings.CHAT_WIDGET_STORE = "s3"
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="acme-widgets")
        store_put(tmp_path, "acme-widgets", "counter/v1.js.gz", encode="gzip")
        assert gzip.decompress(s3.get_object(Bucket="acme-widgets", Key="counter/v1.js.gz")["Body"].read()).decode() == SCRIPT
        define(admin_client, "counter", {"storeBucket": "acme-widgets", "storeKey": "counter/v1.js.gz", "encoding": "gzip"})
        assert user_client.get("/api/chat/webcomponent/demo/counter").content.decode() == SCRIPT
        out = io.StringIO()
        call_command("store_put", "acme-widgets", "--list", stdout=out)
        assert out.getvalue().startswith("acme-widgets/counter/v1.js.gz\t")
        define(admin_client, "missing", {"storeBucket": "acme-widgets", "storeKey": "counter/absent.js"})
        assert_error(user_client.get("/api/chat/webcomponent/demo/missing"), 404, "NOT_FOUND", mentions="acme-widgets/counter/absent.js")


def test_store_put_reads_standard_input(monkeypatch, admin_client, user_client):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"// from a pipe\n")))
    call_command("store_put", "widgets", "piped.js", "-", "--encode", "gzip+base64", stdout=io.StringIO())
    define(admin_client, "piped", {"storeBucket": "widgets", "storeKey": "piped.js", "encoding": "gzip+base64"})
    assert user_client.get("/api/chat/webcomponent/demo/piped").content == b"// from a pipe\n"


@pytest.mark.parametrize("encoding", ["none", "gzip", "gzip+base64"])
def test_a_script_at_the_limit_is_served_and_one_byte_more_is_a_502_naming_it(settings, admin_client, user_client, encoding):
    settings.CHAT_WIDGET_SCRIPT_MAX_BYTES = 4096
    for name, size in (("fits", 4096), ("over", 4097)):
        storages["widget_store"].save(f"widgets/limit/{name}.js", ContentFile(encode(b"x" * size, encoding)))
        define(
            admin_client,
            f"{name}-{encoding.replace('+', '-')}",
            {"storeBucket": "widgets", "storeKey": f"limit/{name}.js", "encoding": encoding},
        )
    assert user_client.get(f"/api/chat/webcomponent/demo/fits-{encoding.replace('+', '-')}").content == b"x" * 4096
    assert_error(
        user_client.get(f"/api/chat/webcomponent/demo/over-{encoding.replace('+', '-')}"),
        502,
        "INTERNAL_ERROR",
        mentions="4096 bytes (CHAT_WIDGET_SCRIPT_MAX_BYTES)",
    )


def test_a_gzip_file_of_several_members_is_served_whole(admin_client, user_client):
    storages["widget_store"].save("widgets/multi.js.gz", ContentFile(gzip.compress(b"const a = 1;\n") + gzip.compress(b"const b = 2;\n")))
    define(admin_client, "multi", {"storeBucket": "widgets", "storeKey": "multi.js.gz", "encoding": "gzip"})
    assert user_client.get("/api/chat/webcomponent/demo/multi").content == b"const a = 1;\nconst b = 2;\n"


def test_a_cut_short_gzip_file_is_a_502(admin_client, user_client):
    storages["widget_store"].save("widgets/cut.js.gz", ContentFile(gzip.compress(SCRIPT.encode() * 50)[:-20]))
    define(admin_client, "cut", {"storeBucket": "widgets", "storeKey": "cut.js.gz", "encoding": "gzip"})
    assert_error(user_client.get("/api/chat/webcomponent/demo/cut"), 502, "INTERNAL_ERROR", mentions="not valid gzip")


@pytest.mark.parametrize("encoding", [None, "gzip", "gzip+base64"])
def test_store_put_refuses_a_script_over_the_limit_and_stores_nothing(settings, tmp_path, encoding):
    settings.CHAT_WIDGET_SCRIPT_MAX_BYTES = 4096
    with pytest.raises(CommandError, match=r"4096 bytes \(CHAT_WIDGET_SCRIPT_MAX_BYTES\)"):
        store_put(tmp_path, "widgets", "big.js", encode=encoding, content="y" * 4097)
    assert not storages["widget_store"].exists("widgets/big.js")
    (tmp_path / "bomb.gz").write_bytes(gzip.compress(bytes(1 << 20)))  # already compressed: recognised by its magic number
    with pytest.raises(CommandError, match="CHAT_WIDGET_SCRIPT_MAX_BYTES"):
        call_command("store_put", "widgets", "bomb.js.gz", str(tmp_path / "bomb.gz"), stdout=io.StringIO())
