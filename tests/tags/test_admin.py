"""The Django admin of tag definitions: the API's validator, the services' stamps and cache
invalidation, list columns, filters, search and actions."""

from __future__ import annotations

import json

import pytest

from tags.models import TagDefinition, TagStatus
from tests.factories import TagDefinitionFactory

ADD = "/admin/tags/tagdefinition/add/"
CHANGELIST = "/admin/tags/tagdefinition/"


def form_data(**overrides):
    data = {
        "scope": "demo",
        "tag": "chart",
        "description": "Charts",
        "status": "enabled",
        "usage_mode": "global",
        "widget": json.dumps({"type": "built-in", "builtInType": "chart"}),
        "rendering_contexts": json.dumps({"inline": True, "hero": {"enabled": False}}),
        "can_be_generated_by_llm": "on",
        "llm_instructions_md": "Use <demo.chart>.",
        "llm_instructions": "null",
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def form_errors(response):
    assert response.status_code == 200, "the form was accepted"
    form = response.context["adminform"].form
    return {field: [str(e) for e in errors] for field, errors in form.errors.items()}


def test_admin_add_refuses_an_invalid_widget_type_with_the_api_message(staff):
    response = staff.post(ADD, form_data(widget=json.dumps({"type": "fancy"})))
    errors = form_errors(response)
    assert errors["widget"] == [
        "widget.type: invalid widget type 'fancy': the allowed types are built-in, custom-compiled-in, web-component, pass-through"
    ]
    assert not TagDefinition.objects.exists()


def test_admin_add_refuses_missing_instructions_when_the_model_may_emit_the_tag(staff):
    errors = form_errors(staff.post(ADD, form_data(llm_instructions_md="")))
    assert errors["llm_instructions_md"] == ["llmInstructionsMd: is required when canBeGeneratedByLlm is true (or give llmInstructions)"]
    assert not TagDefinition.objects.exists()


def test_admin_add_refuses_a_missing_description_once(staff):
    errors = form_errors(staff.post(ADD, form_data(description="")))
    assert len(errors["description"]) == 1
    assert not TagDefinition.objects.exists()


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"tag": "my tag"}, "tag", "tag: must contain only letters, digits, hyphens and underscores"),
        (
            {"rendering_contexts": json.dumps({"sidebar": True})},
            "rendering_contexts",
            "renderingContexts.sidebar: unknown rendering context",
        ),
        ({"rendering_contexts": ""}, "rendering_contexts", "Enter JSON; an empty field is not JSON"),
        ({"widget": "{not json"}, "widget", "Enter a valid JSON"),
        (
            {"widget": json.dumps({"type": "web-component", "webComponent": {"storeBucket": "192.168.0.1", "storeKey": "w.js"}})},
            "widget",
            "widget.webComponent.storeBucket: must be a valid bucket name, not an IP address",
        ),
        ({"llm_instructions": json.dumps([{"type": "para"}])}, "llm_instructions", "llmInstructions[0].type: must be 'line' or 'block'"),
    ],
)
def test_admin_add_applies_the_same_rules_as_the_api(staff, overrides, field, message):
    errors = form_errors(staff.post(ADD, form_data(**overrides)))
    assert any(message in error for error in errors[field]), errors
    assert not TagDefinition.objects.exists()


def test_admin_add_saves_through_the_service_with_stamps_and_canonical_contexts(staff, user_client):
    assert user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"] == []
    response = staff.post(ADD, form_data())
    assert response.status_code == 302, form_errors(response)
    saved = TagDefinition.objects.get()
    assert (saved.created_by, saved.last_updated_by) == ("staff", "staff")
    assert saved.rendering_contexts == {"inline": {"enabled": True}, "hero": {"enabled": False}}
    assert saved.llm_instructions is None
    # the cache was invalidated by the admin save
    assert [d["tag"] for d in user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"]] == ["chart"]


def test_admin_add_refuses_an_existing_scope_and_tag(staff):
    TagDefinitionFactory(scope="demo", tag="chart", description="original")
    errors = form_errors(staff.post(ADD, form_data()))
    assert errors["__all__"]
    assert TagDefinition.objects.get().description == "original"


def test_admin_change_keeps_identity_and_creation_stamps(staff):
    definition = TagDefinitionFactory(scope="demo", tag="chart", created_by="creator")
    response = staff.post(f"{CHANGELIST}{definition.pk}/change/", form_data(scope="hacked", tag="renamed", description="Edited"))
    assert response.status_code == 302, form_errors(response)
    saved = TagDefinition.objects.get()
    assert (saved.scope, saved.tag, saved.description) == ("demo", "chart", "Edited")
    assert (saved.created_by, saved.last_updated_by) == ("creator", "staff")
    assert saved.create_date == definition.create_date
    assert saved.last_update > definition.last_update


def test_admin_change_refuses_invalid_json_fields(staff):
    definition = TagDefinitionFactory(description="original")
    errors = form_errors(staff.post(f"{CHANGELIST}{definition.pk}/change/", form_data(widget=json.dumps({"type": "built-in"}))))
    assert "widget.builtInType: is required for a built-in widget" in errors["widget"][0]
    assert TagDefinition.objects.get().description == "original"


@pytest.mark.parametrize(
    ("action", "status"),
    [("enable_selected", TagStatus.ENABLED), ("disable_selected", TagStatus.DISABLED), ("retire_selected", TagStatus.RETIRED)],
)
def test_status_actions_move_the_selected_definitions(staff, user_client, action, status):
    start = TagStatus.DISABLED if status == TagStatus.ENABLED else TagStatus.ENABLED
    chosen = TagDefinitionFactory(status=start)
    other = TagDefinitionFactory(status=start)
    user_client.post("/api/chat/tagdef/search", {}, format="json")  # fill the cache
    response = staff.post(CHANGELIST, {"action": action, "_selected_action": [chosen.pk]})
    assert response.status_code == 302
    chosen.refresh_from_db()
    other.refresh_from_db()
    assert (chosen.status, other.status) == (status, start)
    assert chosen.last_updated_by == "staff"
    visible = {d["tag"] for d in user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"]}
    assert (chosen.tag in visible) == (status == TagStatus.ENABLED)


def test_clear_cache_action_invalidates_the_tag_cache(staff, user_client):
    definition = TagDefinitionFactory(description="v1")
    user_client.post("/api/chat/tagdef/search", {}, format="json")
    TagDefinition.objects.update(description="v2")
    response = staff.post(CHANGELIST, {"action": "clear_tag_cache", "_selected_action": [definition.pk]})
    assert response.status_code == 302
    assert user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"][0]["description"] == "v2"


def test_admin_delete_goes_through_the_service(staff, user_client):
    definition = TagDefinitionFactory()
    user_client.post("/api/chat/tagdef/search", {}, format="json")
    response = staff.post(f"{CHANGELIST}{definition.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not TagDefinition.objects.exists()
    assert user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"] == []


def test_admin_bulk_delete_goes_through_the_service(staff, user_client):
    first, second = TagDefinitionFactory(), TagDefinitionFactory()
    user_client.post("/api/chat/tagdef/search", {}, format="json")
    response = staff.post(CHANGELIST, {"action": "delete_selected", "_selected_action": [first.pk, second.pk], "post": "yes"})
    assert response.status_code == 302
    assert not TagDefinition.objects.exists()
    assert user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"] == []


def test_changelist_shows_columns_and_filters_by_widget_type(staff):
    TagDefinitionFactory(tag="chart", widget={"type": "built-in", "builtInType": "chart"})
    TagDefinitionFactory(tag="remote", widget={"type": "web-component", "webComponent": {"url": "https://x.example.com/w.js"}})
    page = staff.get(CHANGELIST)
    assert page.status_code == 200
    html = page.content.decode()
    assert "web-component" in html and "built-in" in html
    filtered = staff.get(CHANGELIST, {"widget_type": "web-component"})
    assert [d.tag for d in filtered.context["cl"].result_list] == ["remote"]
    by_status = staff.get(CHANGELIST, {"status__exact": "enabled", "q": "remo"})
    assert [d.tag for d in by_status.context["cl"].result_list] == ["remote"]


def test_add_page_renders_json_editors(staff):
    page = staff.get(ADD)
    assert page.status_code == 200
    assert "jsoneditor" in page.content.decode().lower()


@pytest.mark.parametrize("typed", ['{"type": "built-in", "builtInType": ', "", "   "])
def test_admin_change_refuses_malformed_or_empty_json_on_the_field_and_keeps_the_text(staff, typed):
    definition = TagDefinitionFactory(description="original", widget={"type": "built-in", "builtInType": "chart"})
    response = staff.post(f"{CHANGELIST}{definition.pk}/change/", form_data(widget=typed, description="Edited"))
    errors = form_errors(response)
    assert list(errors) == ["widget"]
    assert response.context["adminform"].form["widget"].value() == typed, "the typed text is shown again"
    saved = TagDefinition.objects.get()
    assert (saved.description, saved.widget) == ("original", {"type": "built-in", "builtInType": "chart"})
