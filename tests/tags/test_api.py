"""Admin API and Chat API of tag definitions through HTTP (docs/api.md, "Tag definitions",
"Rate limits")."""

from __future__ import annotations

import pytest
from django.utils.dateparse import parse_datetime

from chatplatform.api.pagination import encode_token
from tags.models import TagDefinition, TagStatus
from tests.conftest import assert_error
from tests.factories import TagDefinitionFactory, tag_payload

UPSERT = "/api/chat-admin/tagdef"
ADMIN_SEARCH = "/api/chat-admin/tagdef/search"
CHAT_SEARCH = "/api/chat/tagdef/search"


def upsert(client, definition, user_id="ops"):
    response = client.post(UPSERT, {"tagDefinition": definition, "userId": user_id}, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def search(client, path, **body):
    response = client.post(path, body, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def keys(definitions):
    return [f"{d['scope']}.{d['tag']}" for d in definitions]


def test_create_returns_the_definition_with_service_stamps(admin_client):
    sent = tag_payload(createdBy="forged", createDate="2001-01-01T00:00:00Z", lastUpdatedBy="forged", groupId="forged")
    body = upsert(admin_client, sent, user_id="ops-1")
    assert body["success"] is True
    definition = body["tagDefinition"]
    assert definition == {
        **tag_payload(),
        "dontCacheThis": False,
        "createdBy": "ops-1",
        "lastUpdatedBy": "ops-1",
        "createDate": definition["createDate"],
        "lastUpdate": definition["lastUpdate"],
    }
    assert parse_datetime(definition["createDate"]).year > 2001
    assert definition["createDate"] == definition["lastUpdate"]


def test_stamps_fall_back_to_the_caller_when_user_id_is_absent(admin_client):
    response = admin_client.post(UPSERT, {"tagDefinition": tag_payload()}, format="json")
    assert response.json()["tagDefinition"]["createdBy"] == "root-admin"


def test_update_keeps_create_date_and_created_by_and_refreshes_last_update(admin_client):
    first = upsert(admin_client, tag_payload(), user_id="creator")["tagDefinition"]
    second = upsert(admin_client, tag_payload(description="Charts, revised", canBeGeneratedByTool=True), user_id="editor")["tagDefinition"]
    assert TagDefinition.objects.count() == 1
    assert second["createDate"] == first["createDate"]
    assert second["createdBy"] == "creator"
    assert second["lastUpdatedBy"] == "editor"
    assert parse_datetime(second["lastUpdate"]) > parse_datetime(first["lastUpdate"])
    assert second["description"] == "Charts, revised"
    assert second["canBeGeneratedByTool"] is True


def test_update_replaces_the_whole_definition(admin_client):
    upsert(admin_client, tag_payload(llmInstructions=[{"type": "line", "text": "x"}], dontCacheThis=True))
    updated = upsert(admin_client, tag_payload())["tagDefinition"]
    assert "llmInstructions" not in updated
    assert updated["dontCacheThis"] is False


def test_boolean_rendering_contexts_are_stored_and_returned_as_objects(admin_client):
    sent = tag_payload(renderingContexts={"inline": True, "canvas": False, "dialog": True})
    returned = upsert(admin_client, sent)["tagDefinition"]["renderingContexts"]
    expected = {"inline": {"enabled": True}, "canvas": {"enabled": False}, "dialog": {"enabled": True}}
    assert returned == expected
    assert TagDefinition.objects.get().rendering_contexts == expected
    assert search(admin_client, ADMIN_SEARCH)["tagDefinitions"][0]["renderingContexts"] == expected


def test_object_rendering_contexts_keep_their_options(admin_client):
    contexts = {
        "hero": {"enabled": True, "sizing": {"minWidth": "200px", "maxHeight": 600}},
        "inline": True,
        "spotlight": {"enabled": False, "displayOrder": 2, "isDefault": True},
    }
    returned = upsert(admin_client, tag_payload(renderingContexts=contexts))["tagDefinition"]["renderingContexts"]
    assert returned == {
        "inline": {"enabled": True},
        "spotlight": {"enabled": False, "displayOrder": 2, "isDefault": True},
        "hero": {"enabled": True, "sizing": {"minWidth": "200px", "maxHeight": 600}},
    }


def test_older_form_is_completed_per_contract(admin_client):
    older = {
        "scope": "legacy",
        "tag": "map",
        "enabled": False,
        "widget": {"type": "custom-compiled-in"},
        "llmInstructions": [{"type": "line", "text": "Use <legacy.map> for places."}],
    }
    definition = upsert(admin_client, older)["tagDefinition"]
    assert definition["status"] == "disabled"
    assert definition["usageMode"] == "chat-app"
    assert definition["renderingContexts"] == {"inline": {"enabled": True}}
    assert definition["canBeGeneratedByLlm"] is True
    assert definition["canBeGeneratedByTool"] is False
    assert definition["description"] == "map"
    assert definition["llmInstructions"] == [{"type": "line", "text": "Use <legacy.map> for places."}]
    assert "enabled" not in definition
    assert upsert(admin_client, {**older, "enabled": True})["tagDefinition"]["status"] == "enabled"


def test_older_form_without_instructions_is_refused_naming_the_field(admin_client):
    older = {"scope": "legacy", "tag": "map", "enabled": True, "widget": {"type": "pass-through"}}
    assert_error(
        admin_client.post(UPSERT, {"tagDefinition": older}, format="json"), 400, mentions="tagDefinition.llmInstructionsMd: is required"
    )


def test_structured_instructions_are_normalised(admin_client):
    items = [
        {"type": "line", "text": "  Intro  ", "extra": 1},
        {"type": "block", "title": "Rules", "lines": [{"type": "line", "text": "one"}]},
    ]
    returned = upsert(admin_client, tag_payload(llmInstructionsMd=None, llmInstructions=items))["tagDefinition"]["llmInstructions"]
    assert returned == [{"type": "line", "text": "Intro"}, {"type": "block", "title": "Rules", "lines": [{"type": "line", "text": "one"}]}]


def test_delete_removes_the_definition_for_good(admin_client):
    upsert(admin_client, tag_payload())
    response = admin_client.delete(UPSERT, {"tagDefinition": {"scope": "demo", "tag": "chart"}, "userId": "ops"}, format="json")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert not TagDefinition.objects.exists()
    assert search(admin_client, ADMIN_SEARCH)["tagDefinitions"] == []


def test_delete_of_an_absent_definition_is_404_naming_scope_and_tag(admin_client):
    response = admin_client.delete(UPSERT, {"tagDefinition": {"scope": "demo", "tag": "nothing"}}, format="json")
    body = assert_error(response, 404, "NOT_FOUND", mentions="tag definition not found")
    assert "'demo'" in body["error"] and "'nothing'" in body["error"]


def test_delete_needs_scope_and_tag(admin_client):
    assert_error(admin_client.delete(UPSERT, {"tagDefinition": {"scope": "demo"}}, format="json"), 400, mentions="tagDefinition.tag")
    assert_error(admin_client.delete(UPSERT, {}, format="json"), 400, mentions="tagDefinition: This field is required")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", UPSERT),
        ("delete", UPSERT),
        ("post", ADMIN_SEARCH),
        ("post", "/api/chat-admin/tagdef/clear-cache"),
        ("post", "/api/chat-admin/tagdef/deploy"),
    ],
)
def test_non_admin_cannot_manage_tag_definitions(user_client, method, path):
    response = getattr(user_client, method)(path, {"tagDefinition": tag_payload()}, format="json")
    assert_error(response, 403, "INSUFFICIENT_PERMISSIONS", mentions="insufficient permissions to manage tag definitions")
    assert not TagDefinition.objects.exists()


def test_tag_endpoints_need_authentication(anon_client, db):
    assert_error(anon_client.post(CHAT_SEARCH, {}, format="json"), 401)
    assert_error(anon_client.post(UPSERT, {"tagDefinition": tag_payload()}, format="json"), 401)


def test_tag_endpoints_have_their_own_rate_limits(admin_client, user_client):
    assert user_client.post(CHAT_SEARCH, {}, format="json")["X-RateLimit-Limit"] == "1000"
    assert admin_client.post(ADMIN_SEARCH, {}, format="json")["X-RateLimit-Limit"] == "100"
    assert admin_client.post("/api/chat-admin/tagdef/clear-cache", {}, format="json")["X-RateLimit-Limit"] == "100"


def test_status_moves_follow_the_spec_and_searches_show_them(admin_client, user_client):
    """Status moves: enabled → disabled → enabled → retired, disabled → retired."""
    upsert(admin_client, tag_payload(tag="a"))
    upsert(admin_client, tag_payload(tag="b"))
    assert keys(search(user_client, CHAT_SEARCH)["tagDefinitions"]) == ["demo.a", "demo.b"]

    upsert(admin_client, tag_payload(tag="a", status="disabled"))
    assert keys(search(user_client, CHAT_SEARCH)["tagDefinitions"]) == ["demo.b"]
    admin_view = search(admin_client, ADMIN_SEARCH)["tagDefinitions"]
    assert [(d["tag"], d["status"]) for d in admin_view] == [("a", "disabled"), ("b", "enabled")]

    upsert(admin_client, tag_payload(tag="a", status="enabled"))
    assert keys(search(user_client, CHAT_SEARCH)["tagDefinitions"]) == ["demo.a", "demo.b"]

    upsert(admin_client, tag_payload(tag="a", status="retired"))  # enabled → retired directly
    upsert(admin_client, tag_payload(tag="b", status="disabled"))
    upsert(admin_client, tag_payload(tag="b", status="retired"))  # disabled → retired
    assert search(user_client, CHAT_SEARCH)["tagDefinitions"] == []
    assert [d["status"] for d in search(admin_client, ADMIN_SEARCH)["tagDefinitions"]] == ["retired", "retired"]


def test_a_retired_definition_can_be_brought_back_deliberately(admin_client, user_client):
    upsert(admin_client, tag_payload(status="retired"))
    upsert(admin_client, tag_payload(status="enabled"))
    assert keys(search(user_client, CHAT_SEARCH)["tagDefinitions"]) == ["demo.chart"]


@pytest.mark.parametrize("path", [CHAT_SEARCH, ADMIN_SEARCH])
def test_instructions_are_returned_only_when_asked_for(admin_client, path):
    upsert(admin_client, tag_payload(llmInstructions=[{"type": "line", "text": "also this"}]))
    plain = search(admin_client, path)["tagDefinitions"][0]
    assert "llmInstructionsMd" not in plain and "llmInstructions" not in plain
    assert plain["description"] == "Charts in replies"
    full = search(admin_client, path, includeInstructions=True)["tagDefinitions"][0]
    assert full["llmInstructionsMd"] == "Put chart JSON inside <demo.chart>."
    assert full["llmInstructions"] == [{"type": "line", "text": "also this"}]


def test_any_authenticated_user_may_search_enabled_definitions(client_for, admin_client):
    upsert(admin_client, tag_payload())
    body = search(client_for("bob"), CHAT_SEARCH, paginationToken=None)
    assert body["success"] is True
    assert keys(body["tagDefinitions"]) == ["demo.chart"]
    assert "paginationToken" not in body


def _bulk(count, **fields):
    TagDefinition.objects.bulk_create([TagDefinitionFactory.build(scope=f"s{i % 3}", tag=f"t{i:03d}", **fields) for i in range(count)])


@pytest.mark.parametrize("path", [CHAT_SEARCH, ADMIN_SEARCH])
def test_search_pages_hold_100_definitions_in_scope_and_tag_order(admin_client, path):
    _bulk(230)
    TagDefinition.objects.filter(tag__in=["t000", "t001"]).update(status=TagStatus.RETIRED)
    expected_total = 230 if path == ADMIN_SEARCH else 228
    seen, token, pages = [], None, 0
    while True:
        body = search(admin_client, path, paginationToken=token)
        pages += 1
        seen += keys(body["tagDefinitions"])
        token = body.get("paginationToken")
        if token is None:
            break
        assert len(body["tagDefinitions"]) == 100
    assert pages == 3
    assert len(seen) == expected_total == len(set(seen))
    assert seen == sorted(seen, key=lambda k: tuple(k.split(".")))


def test_exactly_one_full_page_has_no_token(admin_client):
    _bulk(100)
    assert "paginationToken" not in search(admin_client, ADMIN_SEARCH)
    assert "paginationToken" not in search(admin_client, CHAT_SEARCH)


@pytest.mark.parametrize("path", [CHAT_SEARCH, ADMIN_SEARCH])
def test_a_forged_pagination_token_is_refused(admin_client, path):
    _bulk(101)
    genuine = search(admin_client, path)["paginationToken"]
    signed_but_incomplete = encode_token({"scope": "s0"}, kind="tagdef-chat" if path == CHAT_SEARCH else "tagdef-admin")
    for forged in [genuine[:-3] + "abc", "not-a-token", signed_but_incomplete, 42]:
        assert_error(
            admin_client.post(path, {"paginationToken": forged}, format="json"), 400, "INVALID_REQUEST", mentions="paginationToken"
        )


def test_a_token_of_one_search_is_refused_by_the_other(admin_client):
    _bulk(101)
    admin_token = search(admin_client, ADMIN_SEARCH)["paginationToken"]
    assert_error(admin_client.post(CHAT_SEARCH, {"paginationToken": admin_token}, format="json"), 400, mentions="paginationToken")


def test_search_body_fields_are_validated(user_client):
    assert_error(user_client.post(CHAT_SEARCH, {"includeInstructions": "maybe"}, format="json"), 400, mentions="includeInstructions")


def test_tag_endpoints_are_documented_in_the_openapi_schema(anon_client, db):
    paths = anon_client.get("/api/schema/?format=json").json()["paths"]
    for path in [UPSERT, ADMIN_SEARCH, CHAT_SEARCH, "/api/chat-admin/tagdef/clear-cache", "/api/chat-admin/tagdef/deploy"]:
        assert path in paths
    assert {"post", "delete"} <= set(paths[UPSERT])
    assert "requestBody" in paths[CHAT_SEARCH]["post"]
