"""IaC batches of tag definitions (docs/api.md, "Infrastructure-as-code batches"): `POST /api/chat-admin/tagdef/deploy` and
`manage.py deploy_tagdefs`."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chatplatform.iac import encode_batch
from tags.models import TagDefinition
from tests.conftest import assert_error
from tests.factories import TagDefinitionFactory, tag_payload, web_component

DEPLOY = "/api/chat-admin/tagdef/deploy"


def deploy(client, definitions, *, group="ui-widgets", stage="dev", user_id="pipeline", timestamp=1700000000):
    data = encode_batch({"userId": user_id, "tagDefinitions": definitions})
    return client.post(DEPLOY, {"stage": stage, "timestamp": timestamp, "groupId": group, "data": data}, format="json")


def rows():
    return {(d.scope, d.tag): d for d in TagDefinition.objects.all()}


def test_batch_applies_every_member_with_the_group_and_the_batch_user(admin_client):
    response = deploy(admin_client, [tag_payload(tag="a"), tag_payload(tag="b", status="disabled")])
    assert response.status_code == 200, response.json()
    assert response.json() == {"success": True, "applied": 2, "deleted": 0}
    stored = rows()
    assert set(stored) == {("demo", "a"), ("demo", "b")}
    assert {d.group_id for d in stored.values()} == {"ui-widgets"}
    assert {d.created_by for d in stored.values()} == {"pipeline"}
    listed = admin_client.post("/api/chat-admin/tagdef/search", {}, format="json").json()["tagDefinitions"]
    assert [d["groupId"] for d in listed] == ["ui-widgets", "ui-widgets"]


def test_redeploy_updates_members_and_deletes_members_missing_from_the_batch(admin_client):
    deploy(admin_client, [tag_payload(tag="a"), tag_payload(tag="b"), tag_payload(tag="c")])
    TagDefinitionFactory(scope="demo", tag="other-group", group_id="elsewhere")
    TagDefinitionFactory(scope="demo", tag="by-hand")
    created = rows()[("demo", "a")].create_date

    response = deploy(admin_client, [tag_payload(tag="a", description="v2"), tag_payload(tag="d")], timestamp="2026-11-22T10:00:00Z")
    assert response.json() == {"success": True, "applied": 2, "deleted": 2}
    stored = rows()
    assert set(stored) == {("demo", "a"), ("demo", "d"), ("demo", "other-group"), ("demo", "by-hand")}
    assert stored[("demo", "a")].description == "v2"
    assert stored[("demo", "a")].create_date == created


def test_a_batch_takes_over_a_definition_it_names(admin_client):
    TagDefinitionFactory(scope="demo", tag="a", group_id=None)
    deploy(admin_client, [tag_payload(tag="a")])
    assert rows()[("demo", "a")].group_id == "ui-widgets"


def test_an_api_upsert_keeps_the_group_of_a_deployed_definition(admin_client):
    deploy(admin_client, [tag_payload(tag="a")])
    admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": tag_payload(tag="a", description="hand edit")}, format="json")
    assert rows()[("demo", "a")].group_id == "ui-widgets"


def test_stage_placeholder_in_a_web_component_url_is_replaced(admin_client, settings):
    settings.CHAT_STAGE = "prod"
    widget = web_component(url="https://widgets-{{stage}}.example.com/{{stage}}/chart.js")
    response = deploy(admin_client, [tag_payload(widget=widget)], stage="prod")
    assert response.status_code == 200, response.json()
    assert TagDefinition.objects.get().widget["webComponent"]["url"] == "https://widgets-prod.example.com/prod/chart.js"


def test_stage_placeholder_is_kept_by_a_plain_upsert(admin_client):
    widget = web_component(url="https://widgets.example.com/{{stage}}/chart.js")
    admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": tag_payload(widget=widget)}, format="json")
    assert TagDefinition.objects.get().widget["webComponent"]["url"] == "https://widgets.example.com/{{stage}}/chart.js"


def test_wrong_stage_is_refused_and_nothing_applied(admin_client):
    assert_error(
        deploy(admin_client, [tag_payload()], stage="prod"),
        400,
        "INVALID_REQUEST",
        mentions="stage: must equal this deployment's stage 'dev'",
    )
    assert not TagDefinition.objects.exists()


def test_one_invalid_member_refuses_the_whole_batch(admin_client):
    deploy(admin_client, [tag_payload(tag="keep")])
    response = deploy(admin_client, [tag_payload(tag="a"), tag_payload(tag="b", widget={"type": "fancy"}), tag_payload(tag="c")])
    assert_error(response, 400, "INVALID_REQUEST", mentions="data.tagDefinitions[1].widget.type: invalid widget type")
    assert set(rows()) == {("demo", "keep")}


def test_every_invalid_member_is_named(admin_client):
    response = deploy(admin_client, [tag_payload(tag="bad tag"), tag_payload(), tag_payload(description=None)])
    body = assert_error(response, 400, mentions="data.tagDefinitions[0].tag:")
    assert "data.tagDefinitions[2].description: This field is required" in body["error"]
    assert "tagDefinitions[1]" not in body["error"]


def test_a_definition_twice_in_one_batch_is_refused(admin_client):
    response = deploy(admin_client, [tag_payload(tag="a"), tag_payload(tag="a")])
    assert_error(response, 400, mentions="data.tagDefinitions[1].tag: duplicates item 0")
    assert not TagDefinition.objects.exists()


@pytest.mark.parametrize(
    ("body", "mention"),
    [
        ({"timestamp": 1, "groupId": "g", "data": encode_batch({"tagDefinitions": []})}, "stage: This field is required"),
        ({"stage": "dev", "timestamp": 1, "data": encode_batch({"tagDefinitions": []})}, "groupId: This field is required"),
        (
            {"stage": "dev", "timestamp": [1], "groupId": "g", "data": encode_batch({"tagDefinitions": []})},
            "timestamp: must be a string or a number",
        ),
        ({"stage": "dev", "groupId": "g", "data": "not base64!"}, "data: must be base64 of gzip-compressed JSON"),
        ({"stage": "dev", "groupId": "g", "data": encode_batch({"userId": "x"})}, "data.tagDefinitions: is required: a list"),
        ({"stage": "dev", "groupId": "g", "data": encode_batch({"userId": 5, "tagDefinitions": []})}, "data.userId: must be a string"),
    ],
)
def test_malformed_batches_are_refused_naming_the_field(admin_client, body, mention):
    assert_error(admin_client.post(DEPLOY, body, format="json"), 400, "INVALID_REQUEST", mentions=mention)


def test_an_empty_batch_deletes_the_whole_group(admin_client):
    deploy(admin_client, [tag_payload(tag="a"), tag_payload(tag="b")])
    assert deploy(admin_client, []).json() == {"success": True, "applied": 0, "deleted": 2}
    assert not TagDefinition.objects.exists()


def test_a_deploy_invalidates_the_chat_search(admin_client, user_client):
    assert user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"] == []
    deploy(admin_client, [tag_payload(tag="a")])
    assert [d["tag"] for d in user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"]] == ["a"]


# --- manage.py deploy_tagdefs ---------------------------------------------------------------------


def write(tmp_path, content):
    path = tmp_path / "tags.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def run(*args, **options):
    out = StringIO()
    call_command("deploy_tagdefs", *args, stdout=out, **options)
    return out.getvalue()


def test_command_deploys_a_file_like_the_endpoint(tmp_path, db, settings):
    settings.CHAT_STAGE = "qa"
    TagDefinitionFactory(scope="demo", tag="gone", group_id="files")
    definitions = [tag_payload(tag="a", widget=web_component(url="https://cdn.example.com/{{stage}}/a.js")), tag_payload(tag="b")]
    out = run(write(tmp_path, {"userId": "file-user", "tagDefinitions": definitions}), group_id="files")
    assert "applied 2, deleted 1" in out
    stored = rows()
    assert set(stored) == {("demo", "a"), ("demo", "b")}
    assert stored[("demo", "a")].widget["webComponent"]["url"] == "https://cdn.example.com/qa/a.js"
    assert stored[("demo", "a")].created_by == "file-user"
    assert stored[("demo", "b")].group_id == "files"


def test_command_user_id_option_wins_over_the_file(tmp_path, db):
    run(write(tmp_path, {"userId": "file-user", "tagDefinitions": [tag_payload()]}), group_id="files", user_id="cli-user")
    assert TagDefinition.objects.get().created_by == "cli-user"


def test_command_dry_run_writes_nothing(tmp_path, db):
    TagDefinitionFactory(scope="demo", tag="gone", group_id="files")
    out = run(write(tmp_path, {"tagDefinitions": [tag_payload()]}), group_id="files", dry_run=True)
    assert "would apply 1, would delete 1" in out
    assert set(rows()) == {("demo", "gone")}


def test_command_refuses_an_invalid_member_and_applies_nothing(tmp_path, db):
    path = write(tmp_path, {"tagDefinitions": [tag_payload(tag="a"), tag_payload(tag="b", status="archived")]})
    with pytest.raises(CommandError, match=r"tagDefinitions\[1\]\.status"):
        run(path, group_id="files")
    assert not TagDefinition.objects.exists()


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_command_refuses_a_file_that_is_not_a_json_object(tmp_path, db, content):
    with pytest.raises(CommandError):
        run(write(tmp_path, content), group_id="files")


def test_command_refuses_a_missing_file(tmp_path, db):
    with pytest.raises(CommandError, match="cannot read"):
        run(str(tmp_path / "absent.json"), group_id="files")
