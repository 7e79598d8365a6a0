"""What the chat page gives the widget runtime (docs/widgets.md): the Content-Security-Policy
allowing exactly the configured script origins, `config.widgets`, and the `custom-compiled-in`
renderer modules of CHAT_WIDGET_RENDERERS_DIR."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from chat.users.models import ChatUser
from tests.chat.test_pages import config_of
from tests.factories import ChatAppFactory, TagDefinitionFactory

pytestmark = pytest.mark.django_db

TAGS_ON = {"tags": {"enabled": True}}


def page(path: str = "/chat/support/") -> object:
    client = Client()
    client.force_login(ChatUser.objects.create_user("alice", "correct horse battery"))
    return client.get(path)


def expected_csp(nonce: str, script_sources: str) -> str:
    return (
        f"default-src 'self'; script-src 'self' 'nonce-{nonce}'{script_sources}; style-src 'self'; img-src 'self' data: blob:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )


def nonce_of(response) -> str:
    return re.search(r'<script type="importmap" nonce="([^"]+)">', response.content.decode()).group(1)


def test_without_script_origins_the_policy_allows_self_and_the_nonce_only(settings):
    settings.CHAT_WIDGET_SCRIPT_ORIGINS = []
    ChatAppFactory(chat_app_id="support")
    response = page()
    assert response["Content-Security-Policy"] == expected_csp(nonce_of(response), "")
    assert config_of(response)["widgets"]["scriptOrigins"] == []


def test_the_policy_allows_exactly_the_configured_script_origins(settings):
    settings.CHAT_WIDGET_SCRIPT_ORIGINS = ["https://widgets.example.com", "http://localhost:9000"]
    ChatAppFactory(chat_app_id="support")
    response = page()
    assert response["Content-Security-Policy"] == expected_csp(nonce_of(response), " https://widgets.example.com http://localhost:9000")
    assert config_of(response)["widgets"]["scriptOrigins"] == ["https://widgets.example.com", "http://localhost:9000"]


def test_the_config_lists_the_usable_tags_and_where_their_scripts_and_data_live(settings, tmp_path):
    settings.CHAT_SITE_FEATURES = TAGS_ON
    settings.CHAT_WIDGET_RENDERERS_DIR = tmp_path
    settings.CHAT_STAGE = "qa"
    ChatAppFactory(
        chat_app_id="support",
        features={
            "tags": {
                "enabled": True,
                "tagsEnabled": [{"scope": "demo", "tag": "picked"}],
                "tagsDisabled": [{"scope": "demo", "tag": "off-here"}],
            }
        },
    )
    TagDefinitionFactory(tag="chart", llm_instructions_md="secret instructions")
    TagDefinitionFactory(tag="stored", widget={"type": "web-component", "webComponent": {"storeBucket": "widgets", "storeKey": "s.js"}})
    TagDefinitionFactory(
        tag="remote", widget={"type": "web-component", "webComponent": {"url": "https://widgets.example.com/{{stage}}/r.js"}}
    )
    TagDefinitionFactory(tag="picked", usage_mode="chat-app")
    TagDefinitionFactory(tag="not-picked", usage_mode="chat-app")
    TagDefinitionFactory(tag="off-here")
    TagDefinitionFactory(tag="disabled", status="disabled")
    widgets = config_of(page())["widgets"]
    assert [f"{t['scope']}.{t['tag']}" for t in widgets["tags"]] == ["demo.chart", "demo.picked", "demo.remote", "demo.stored"]
    chart = widgets["tags"][0]
    assert chart["widget"] == {"type": "built-in", "builtInType": "chart"}
    assert chart["canBeGeneratedByLlm"] is True and chart["renderingContexts"] == {"inline": {"enabled": True}}
    assert "llmInstructionsMd" not in chart  # instructions are for the model, not the page
    assert widgets["webComponentUrl"] == "/api/chat/webcomponent/"
    assert widgets["widgetDataUrl"] == "/api/chat/widget-data/"
    assert widgets["webComponentScripts"] == {
        "demo.stored": "/api/chat/webcomponent/demo/stored",
        "demo.remote": "https://widgets.example.com/qa/r.js",  # {{stage}} is CHAT_STAGE
    }
    assert widgets["renderers"] == {}


def test_with_the_tags_feature_off_no_tag_is_usable(settings):
    settings.CHAT_SITE_FEATURES = {}
    ChatAppFactory(chat_app_id="support", features=TAGS_ON)
    TagDefinitionFactory(tag="chart")
    assert config_of(page())["widgets"]["tags"] == []


def test_a_renderer_module_of_the_folder_is_listed_and_served(settings, tmp_path):
    (tmp_path / "acme.map.js").write_text("export default function render(element) { element.textContent = 'map'; }\n")
    (tmp_path / "notes.txt").write_text("not a renderer")
    (tmp_path / "no-scope.js").write_text("// not scope.tag.js")
    (tmp_path / "a.b.c.js").write_text("// three parts")
    settings.CHAT_WIDGET_RENDERERS_DIR = tmp_path
    ChatAppFactory(chat_app_id="support")
    assert config_of(page())["widgets"]["renderers"] == {"acme.map": "/widgets/renderers/acme.map.js"}

    served = Client().get("/widgets/renderers/acme.map.js")
    assert served.status_code == 200
    assert served["Content-Type"] == "text/javascript; charset=utf-8"
    assert b"".join(served.streaming_content).startswith(b"export default function render")
    for name in ("notes.txt", "no-scope.js", "a.b.c.js", "absent.tag.js", "..%2Fsecret.js"):
        assert Client().get(f"/widgets/renderers/{name}").status_code == 404, name


def test_without_a_renderers_folder_nothing_is_served(settings):
    settings.CHAT_WIDGET_RENDERERS_DIR = None
    ChatAppFactory(chat_app_id="support")
    assert config_of(page())["widgets"]["renderers"] == {}
    assert Client().get("/widgets/renderers/acme.map.js").status_code == 404
