"""The demo's widgets (docs/widgets.md): one of each kind and context that works offline, their scripts in
the database-backed widget store, written by `seed_demo` only when missing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from chat.users.models import ChatUser
from chatplatform.models import StoredObject
from tests.chat.test_pages import config_of

pytestmark = pytest.mark.django_db

SCRIPTS = Path(__file__).resolve().parents[2] / "chat" / "demo_widgets"


def seed() -> str:
    out = io.StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


@pytest.fixture
def seeded(settings) -> str:
    settings.CHAT_SITE_FEATURES = {"tags": {"enabled": True}}
    settings.DEBUG = True  # `make run`'s, so the demo's chat user exists
    return seed()


def test_each_widget_kind_and_context_of_the_demo_is_defined(seeded, user_client):
    tags = {f"{t['scope']}.{t['tag']}": t for t in user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"]}
    assert tags["demo.chart"]["widget"] == {"type": "built-in", "builtInType": "chart"}
    assert tags["demo.suggestion"]["widget"] == {"type": "built-in", "builtInType": "prompt"}
    assert tags["demo.counter"]["widget"]["webComponent"]["encoding"] == "gzip"
    assert set(tags["demo.counter"]["renderingContexts"]) == {"inline", "canvas", "dialog"}
    assert tags["demo.tips"]["renderingContexts"]["spotlight"]["isDefault"] is True
    assert tags["demo.tips"]["widget"]["webComponent"]["encoding"] == "gzip+base64"
    assert tags["demo.welcome"]["renderingContexts"]["hero"]["autoCreateInstance"] is True
    assert tags["demo.welcome"]["widget"]["webComponent"]["encoding"] == "none"
    assert "Widgets: 4 demo widget tag definitions (4 added)" in seeded


@pytest.mark.parametrize(
    ("tag", "file"), [("counter", "counter.js"), ("tips", "tips.js"), ("welcome", "welcome.js"), ("weather-card", "weather-card.js")]
)
def test_the_stored_scripts_are_in_the_database_and_served_decoded(seeded, user_client, tag, file):
    assert StoredObject.objects.filter(name__startswith="demo-widgets/").count() == 4
    response = user_client.get(f"/api/chat/webcomponent/demo/{tag}")
    assert response.status_code == 200
    assert response.content == (SCRIPTS / file).read_bytes()


def test_the_demo_chat_page_lists_the_demo_widgets(seeded):
    browser = Client()
    browser.force_login(ChatUser.objects.get(user_id="demo"))
    widgets = config_of(browser.get("/chat/demo/"))["widgets"]
    assert {"demo.chart", "demo.suggestion", "demo.counter", "demo.tips", "demo.welcome"} <= {
        f"{t['scope']}.{t['tag']}" for t in widgets["tags"]
    }
    assert widgets["webComponentScripts"]["demo.counter"] == "/api/chat/webcomponent/demo/counter"


def test_a_rerun_never_overwrites_what_an_operator_changed(seeded, admin_client, tmp_path):
    counter = admin_client.post("/api/chat-admin/tagdef/search", {"includeInstructions": True}, format="json").json()["tagDefinitions"]
    counter = next(t for t in counter if t["tag"] == "counter")
    counter["description"] = "Changed by the operator"
    assert admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": counter}, format="json").status_code == 200
    replacement = tmp_path / "welcome.js"
    replacement.write_text("// the operator's welcome\n")
    call_command("store_put", "demo-widgets", "welcome.js", str(replacement), stdout=io.StringIO())

    assert "(0 added)" in seed()
    again = admin_client.post("/api/chat-admin/tagdef/search", {}, format="json").json()["tagDefinitions"]
    assert next(t for t in again if t["tag"] == "counter")["description"] == "Changed by the operator"
    assert admin_client.get("/api/chat/webcomponent/demo/welcome").content == b"// the operator's welcome\n"


def test_a_deleted_demo_widget_comes_back_on_the_next_run(seeded, admin_client):
    response = admin_client.delete("/api/chat-admin/tagdef", {"tagDefinition": {"scope": "demo", "tag": "tips"}}, format="json")
    assert response.status_code == 200, response.json()
    StoredObject.objects.filter(name="demo-widgets/tips.js.b64").delete()
    assert "(1 added)" in seed()
    assert admin_client.get("/api/chat/webcomponent/demo/tips").content == (SCRIPTS / "tips.js").read_bytes()
