"""Which tags a chat app's model may use (docs/api.md, "Tag definitions", "The system prompt"): `tags_usable_by`, `instructions_for`,
and the Markdown of structured instructions."""

from __future__ import annotations

import pytest

from tags.instructions import instruction_text, render_instruction_items
from tags.models import TagDefinition, TagStatus, UsageMode
from tags.selectors import instructions_for, tags_for_tools, tags_usable_by
from tests.factories import TagDefinitionFactory

ON = {"tags": {"enabled": True}}


def ref(tag, scope="demo"):
    return {"tag": tag, "scope": scope}


def usable(site, app):
    return [str(d) for d in tags_usable_by(site_features=site, app_features=app)]


@pytest.fixture
def catalogue(db):
    TagDefinitionFactory(tag="global-on", usage_mode=UsageMode.GLOBAL)
    TagDefinitionFactory(tag="global-off-in-app", usage_mode=UsageMode.GLOBAL)
    TagDefinitionFactory(tag="app-only", usage_mode=UsageMode.CHAT_APP)
    TagDefinitionFactory(tag="app-only-not-enabled", usage_mode=UsageMode.CHAT_APP)
    TagDefinitionFactory(tag="prohibited", usage_mode=UsageMode.GLOBAL)
    TagDefinitionFactory(tag="global-disabled", usage_mode=UsageMode.GLOBAL, status=TagStatus.DISABLED)
    TagDefinitionFactory(tag="app-retired", usage_mode=UsageMode.CHAT_APP, status=TagStatus.RETIRED)


SITE = {"tags": {"enabled": True, "tagsProhibited": [ref("prohibited")]}}
APP = {
    "tags": {
        "enabled": True,
        "tagsEnabled": [ref("app-only"), ref("app-retired"), ref("prohibited")],
        "tagsDisabled": [ref("global-off-in-app")],
    }
}


def test_with_tags_on_both_levels_the_rule_of_the_contract_applies(catalogue):
    assert usable(SITE, APP) == ["demo.app-only", "demo.global-on"]


@pytest.mark.parametrize(
    ("site", "app"),
    [
        ({}, APP),
        ({"tags": {"enabled": False}}, APP),
        ({"tags": {"enabled": "true"}}, APP),
        (SITE, {}),
        (SITE, {"tags": {"enabled": False, "tagsEnabled": [ref("app-only")]}}),
        (None, None),
    ],
    ids=["site-absent", "site-off", "site-not-boolean", "app-absent", "app-off", "no-features"],
)
def test_nothing_is_usable_unless_tags_are_on_site_wide_and_in_the_app(catalogue, site, app):
    assert usable(site, app) == []


def test_a_prohibited_tag_is_never_usable_even_when_the_app_enables_it(catalogue):
    assert "demo.prohibited" not in usable(SITE, APP)
    assert "demo.prohibited" in usable(ON, ON)


def test_a_global_tag_is_usable_unless_the_app_disables_it(catalogue):
    assert "demo.global-on" in usable(ON, ON)
    assert "demo.global-off-in-app" in usable(ON, ON)
    assert "demo.global-off-in-app" not in usable(ON, APP)


def test_a_chat_app_tag_is_usable_only_when_the_app_enables_it(catalogue):
    assert "demo.app-only" not in usable(ON, ON)
    assert "demo.app-only" in usable(ON, APP)
    assert "demo.app-only-not-enabled" not in usable(ON, APP)


def test_a_tag_enabled_for_another_scope_does_not_match(catalogue):
    app = {"tags": {"enabled": True, "tagsEnabled": [ref("app-only", scope="other")]}}
    assert "demo.app-only" not in usable(ON, app)


def test_only_enabled_status_is_usable(catalogue):
    everything = {"tags": {"enabled": True, "tagsEnabled": [ref("app-retired")]}}
    assert "demo.global-disabled" not in usable(ON, everything)
    assert "demo.app-retired" not in usable(ON, everything)


def test_malformed_list_entries_are_ignored(catalogue):
    app = {"tags": {"enabled": True, "tagsEnabled": ["demo.app-only", {"tag": "app-only"}, None], "tagsDisabled": "all"}}
    assert usable(ON, app) == ["demo.global-off-in-app", "demo.global-on", "demo.prohibited"]


def test_the_instructions_are_read_through_the_cache(catalogue, django_assert_num_queries):
    first = instructions_for(site_features=SITE, app_features=APP)
    with django_assert_num_queries(0):
        assert instructions_for(site_features=SITE, app_features=APP) == first


def test_tags_for_tools_are_the_usable_tags_tools_may_emit_read_through_the_cache(catalogue, django_assert_num_queries):
    TagDefinition.objects.filter(tag="global-on").update(can_be_generated_by_tool=True)
    first = tags_for_tools(site_features=SITE, app_features=APP)
    assert first == frozenset({"demo.global-on"})
    with django_assert_num_queries(0):
        assert tags_for_tools(site_features=SITE, app_features=APP) == first


def test_a_write_changes_the_cached_instructions(catalogue, admin_client):
    before = instructions_for(site_features=SITE, app_features=APP)
    TagDefinition.objects.filter(tag="global-on").update(llm_instructions_md="Brand new words.")
    assert admin_client.post("/api/chat-admin/tagdef/clear-cache", format="json").status_code == 200
    after = instructions_for(site_features=SITE, app_features=APP)
    assert after != before and "Brand new words." in after


def test_instructions_are_wrapped_per_tag_and_joined_by_blank_lines(db):
    TagDefinitionFactory(scope="ui", tag="chart", llm_instructions_md="Use charts.\nKeep JSON small.")
    TagDefinitionFactory(
        scope="ui",
        tag="map",
        llm_instructions_md=None,
        llm_instructions=[{"type": "line", "text": "Maps for places."}],
    )
    assert instructions_for(site_features=ON, app_features=ON) == (
        '<tag-instructions type="ui.chart">\nUse charts.\nKeep JSON small.\n</tag-instructions>'
        "\n\n"
        '<tag-instructions type="ui.map">\nMaps for places.\n</tag-instructions>'
    )


def test_instructions_leave_out_tags_the_model_may_not_emit_inline(db):
    TagDefinitionFactory(scope="ui", tag="tool-only", can_be_generated_by_llm=False)
    TagDefinitionFactory(scope="ui", tag="canvas-only", rendering_contexts={"inline": {"enabled": False}, "canvas": {"enabled": True}})
    TagDefinitionFactory(scope="ui", tag="no-contexts", rendering_contexts={})
    TagDefinitionFactory(scope="ui", tag="inline")
    text = instructions_for(site_features=ON, app_features=ON)
    assert text.count("<tag-instructions") == 1
    assert 'type="ui.inline"' in text


def test_instructions_are_empty_when_tags_are_off(db):
    TagDefinitionFactory(scope="ui", tag="chart")
    assert instructions_for(site_features={}, app_features=ON) == ""


def test_structured_instructions_render_to_markdown():
    items = [
        {"type": "line", "text": "Use this tag for charts."},
        {"type": "line", "text": "Never nest it."},
        {"type": "block", "title": "Format", "lines": [{"type": "line", "text": "JSON body"}, {"type": "line", "text": "No comments"}]},
        {"type": "block", "title": "Empty", "lines": []},
        {"type": "line", "text": "Thanks."},
    ]
    assert render_instruction_items(items) == (
        "Use this tag for charts.\nNever nest it.\n\n### Format\n- JSON body\n- No comments\n\n### Empty\n\nThanks."
    )


def test_markdown_instructions_win_over_structured_ones():
    both = TagDefinition(llm_instructions_md="  Markdown  ", llm_instructions=[{"type": "line", "text": "items"}])
    assert instruction_text(both) == "Markdown"
    assert instruction_text(TagDefinition(llm_instructions=[{"type": "line", "text": "items"}])) == "items"
    assert instruction_text(TagDefinition()) == ""


def test_instructions_posted_in_the_older_form_reach_the_prompt(admin_client):
    older = {
        "scope": "legacy",
        "tag": "quiz",
        "enabled": True,
        "widget": {"type": "custom-compiled-in"},
        "llmInstructions": [{"type": "block", "title": "Quiz", "lines": [{"type": "line", "text": "One question at a time"}]}],
    }
    assert admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": older}, format="json").status_code == 200
    app = {"tags": {"enabled": True, "tagsEnabled": [ref("quiz", scope="legacy")]}}
    assert instructions_for(site_features=ON, app_features=app) == (
        '<tag-instructions type="legacy.quiz">\n### Quiz\n- One question at a time\n</tag-instructions>'
    )
