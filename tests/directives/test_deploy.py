"""IaC batches: `POST /api/chat-admin/semantic-directive/deploy` and `manage.py deploy_directives` (docs/api.md)."""

from __future__ import annotations

import base64
import gzip
import json
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chatplatform.iac import encode_batch
from directives.models import DirectiveDeployment, SemanticDirective
from tests.bombs import GIGABYTE, gzip_bomb
from tests.conftest import assert_error
from tests.factories import SemanticDirectiveFactory

URL = "/api/chat-admin/semantic-directive/deploy"


def member(directive_id, scope="chatapp#support", **fields):
    return {"scope": scope, "id": directive_id, "description": f"when {directive_id}", "instructions": f"Do {directive_id}.", **fields}


def deploy(client, directives, *, group="iac-main", stage="dev", user_id="iac-bot", timestamp="2026-01-01T00:00:00Z"):
    payload = {"semanticDirectives": directives}
    if user_id is not None:
        payload["userId"] = user_id
    body = {"stage": stage, "timestamp": timestamp, "groupId": group, "data": encode_batch(payload)}
    return client.post(URL, body, format="json")


def stored():
    return {(d.scope, d.directive_id): d for d in SemanticDirective.objects.all()}


def test_a_batch_creates_its_directives_with_the_group_id(admin_client):
    response = deploy(
        admin_client, [member("greet"), member("polite", scope=None, scopeType="agent-entity", scopeValue={"agent": "a", "entity": "e"})]
    )
    assert response.status_code == 200, response.json()
    assert response.json() == {"success": True, "applied": 2, "deleted": 0}
    rows = stored()
    assert set(rows) == {("chatapp#support", "greet"), ("agent#a#entity#e", "polite")}
    assert {(d.group_id, d.created_by, d.last_updated_by) for d in rows.values()} == {("iac-main", "iac-bot", "iac-bot")}


def test_a_redeploy_updates_changed_members_and_deletes_missing_ones_of_its_group_only(admin_client):
    deploy(admin_client, [member("greet"), member("polite"), member("drop-me")])
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="other-group", group_id="iac-other")
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="made-by-api", group_id=None)
    before = stored()
    response = deploy(admin_client, [member("greet"), member("polite", instructions="Be polite."), member("new-one")], user_id="bot-2")
    assert response.json() == {"success": True, "applied": 3, "deleted": 1}
    after = stored()
    assert set(after) == {("chatapp#support", key) for key in ("greet", "polite", "new-one", "other-group", "made-by-api")}
    greet, polite = after[("chatapp#support", "greet")], after[("chatapp#support", "polite")]
    assert greet.last_update == before[("chatapp#support", "greet")].last_update  # unchanged member untouched
    assert (polite.instructions, polite.created_by, polite.last_updated_by) == ("Be polite.", "iac-bot", "bot-2")
    assert polite.create_date == before[("chatapp#support", "polite")].create_date
    assert after[("chatapp#support", "other-group")].group_id == "iac-other"
    assert after[("chatapp#support", "made-by-api")].group_id is None


def test_a_batch_takes_over_a_directive_made_through_the_api(admin_client):
    admin_client.post("/api/chat-admin/semantic-directive", {"semanticDirective": member("greet")}, format="json")
    assert deploy(admin_client, [member("greet")]).json()["applied"] == 1
    assert SemanticDirective.objects.get().group_id == "iac-main"


def test_an_api_write_keeps_the_group_of_a_deployed_directive(admin_client):
    deploy(admin_client, [member("greet")])
    body = {"semanticDirective": {**member("greet", instructions="Hello!"), "groupId": "hijack"}}
    wire = admin_client.post("/api/chat-admin/semantic-directive", body, format="json").json()["semanticDirective"]
    assert wire["groupId"] == "iac-main"


def test_an_empty_batch_deletes_the_whole_group(admin_client):
    deploy(admin_client, [member("greet"), member("polite")])
    assert deploy(admin_client, []).json() == {"success": True, "applied": 0, "deleted": 2}
    assert not SemanticDirective.objects.exists()


def test_a_batch_is_recorded_with_its_timestamp(admin_client):
    deploy(admin_client, [member("greet")], timestamp=1767225600)
    record = DirectiveDeployment.objects.get()
    assert (record.group_id, record.stage, record.timestamp, record.user_id, record.applied, record.deleted) == (
        "iac-main",
        "dev",
        "1767225600",
        "iac-bot",
        1,
        0,
    )


def test_stamps_default_to_the_caller_without_a_batch_user(admin_client):
    deploy(admin_client, [member("greet")], user_id=None)
    assert SemanticDirective.objects.get().created_by == "root-admin"


def test_a_wrong_stage_is_refused_and_nothing_is_written(admin_client, settings):
    settings.CHAT_STAGE = "prod"
    assert_error(deploy(admin_client, [member("greet")], stage="dev"), 400, "INVALID_REQUEST", mentions="stage: must equal")
    assert not SemanticDirective.objects.exists()
    assert deploy(admin_client, [member("greet")], stage="prod").status_code == 200


def test_one_invalid_member_applies_nothing(admin_client):
    deploy(admin_client, [member("greet"), member("polite")])
    before = {key: (d.instructions, d.last_update) for key, d in stored().items()}
    batch = [member("greet", instructions="changed"), member("Bad_Id"), member("new-one")]
    assert_error(deploy(admin_client, batch), 400, "INVALID_REQUEST", mentions="semanticDirectives[1].id: must be descriptive kebab-case")
    assert {key: (d.instructions, d.last_update) for key, d in stored().items()} == before
    assert DirectiveDeployment.objects.count() == 1


@pytest.mark.parametrize(
    ("member_fields", "named"),
    [
        ({"scope": "chatapp#x#tool#y"}, "semanticDirectives[1].scope: must be one of"),
        ({"scopeValue": "a#b", "scopeType": "tool", "scope": None}, "semanticDirectives[1].scopeValue: must not contain '#'"),
        ({"description": ""}, "semanticDirectives[1].description: must not be blank"),
        ({"id": "greet"}, "semanticDirectives[1].id: repeats semanticDirectives[0]"),
    ],
)
def test_an_invalid_member_is_named_by_its_index(admin_client, member_fields, named):
    batch = [member("greet"), {**member("polite"), **member_fields}]
    assert_error(deploy(admin_client, batch), 400, "INVALID_REQUEST", mentions=named)
    assert not SemanticDirective.objects.exists()


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ("not base64!!", "data: must be base64 of gzip-compressed JSON"),
        (base64.b64encode(b"plain text").decode(), "data: must be base64 of gzip-compressed JSON"),
        (base64.b64encode(gzip.compress(b"{nope", mtime=0)).decode(), "data: does not hold valid JSON"),
        (base64.b64encode(gzip.compress(b"[1, 2]", mtime=0)).decode(), "data: must hold a JSON object"),
        (encode_batch({"userId": "x"}), "semanticDirectives: is required: a list of directives"),
        (encode_batch({"semanticDirectives": {"a": 1}}), "semanticDirectives: is required: a list of directives"),
        (encode_batch({"semanticDirectives": ["greet"]}), "semanticDirectives[0]: must be an object"),
        (encode_batch({"userId": 5, "semanticDirectives": []}), "data.userId: must be a string"),
    ],
)
def test_garbage_data_is_refused(admin_client, data, named):
    SemanticDirectiveFactory(group_id="iac-main")
    body = {"stage": "dev", "timestamp": "t1", "groupId": "iac-main", "data": data}
    assert_error(admin_client.post(URL, body, format="json"), 400, "INVALID_REQUEST", mentions=named)
    assert SemanticDirective.objects.count() == 1


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"groupId": None}, "groupId: must not be null"),
        ({"groupId": ""}, "groupId: must not be blank"),
        ({"groupId": 7}, "groupId: must be a string"),
        ({"stage": None}, "stage: must not be null"),
        ({"timestamp": {"at": 1}}, "timestamp: must be a string or a number"),
    ],
)
def test_the_envelope_fields_are_checked(admin_client, fields, named):
    body = {"stage": "dev", "timestamp": "t1", "groupId": "iac-main", "data": encode_batch({"semanticDirectives": []}), **fields}
    assert_error(admin_client.post(URL, body, format="json"), 400, "INVALID_REQUEST", mentions=named)


# --- manage.py deploy_directives ------------------------------------------------------------------


@pytest.fixture
def batch_file(tmp_path):
    def write(directives, **extra):
        path = tmp_path / "directives.json"
        path.write_text(json.dumps({"semanticDirectives": directives, **extra}))
        return str(path)

    return write


def run(*args, **options):
    out = StringIO()
    call_command("deploy_directives", *args, stdout=out, **options)
    return out.getvalue()


def test_the_command_applies_a_file_like_the_endpoint(db, batch_file):
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="stale", group_id="from-file")
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="elsewhere", group_id="another")
    output = run(batch_file([member("greet"), member("polite")], userId="file-user"), group_id="from-file")
    assert "create chatapp#support greet" in output
    assert "delete chatapp#support stale" in output
    assert "2 created, 0 updated, 0 unchanged, 1 deleted" in output
    rows = stored()
    assert set(rows) == {("chatapp#support", key) for key in ("greet", "polite", "elsewhere")}
    assert rows[("chatapp#support", "greet")].created_by == "file-user"
    assert rows[("chatapp#support", "greet")].group_id == "from-file"


def test_the_command_user_id_option_wins_over_the_file(db, batch_file):
    run(batch_file([member("greet")], userId="file-user"), group_id="g", user_id="cli-user")
    assert SemanticDirective.objects.get().created_by == "cli-user"


def test_a_dry_run_prints_the_changes_and_writes_nothing(db, batch_file):
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="stale", group_id="g")
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="polite", group_id="g", instructions="old")
    output = run(batch_file([member("greet"), member("polite")]), group_id="g", dry_run=True)
    assert "would create chatapp#support greet" in output
    assert "would update chatapp#support polite" in output
    assert "would delete chatapp#support stale" in output
    assert "dry run, nothing written: group g: 1 to create, 1 to update, 0 unchanged, 1 to delete" in output
    assert set(stored()) == {("chatapp#support", "stale"), ("chatapp#support", "polite")}
    assert SemanticDirective.objects.get(directive_id="polite").instructions == "old"
    assert not DirectiveDeployment.objects.exists()


def test_a_dry_run_still_refuses_an_invalid_member(db, batch_file):
    with pytest.raises(CommandError, match=r"semanticDirectives\[0\]\.scope: must be one of"):
        run(batch_file([member("greet", scope="tool#t#chatapp#c")]), group_id="g", dry_run=True)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1]", "must hold a JSON object"),
        ('{"semanticDirectives": "x"}', "semanticDirectives: is required: a list of directives"),
        ('{"userId": 3, "semanticDirectives": []}', "userId in the file must be a string"),
    ],
)
def test_the_command_refuses_a_bad_file(db, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError, match=message):
        run(str(path), group_id="g")
    assert not SemanticDirective.objects.exists()


def test_the_command_refuses_a_missing_file_and_a_blank_group(db, tmp_path, batch_file):
    with pytest.raises(CommandError, match="no such file"):
        run(str(tmp_path / "absent.json"), group_id="g")
    with pytest.raises(CommandError, match="groupId: is required"):
        run(batch_file([member("greet")]), group_id=" ")


def test_a_gzip_bomb_batch_is_refused_after_reading_only_the_limit(admin_client):
    """A 1 GB batch in about 1 MB of gzip is read as a stream up to the limit, never inflated whole."""
    data = base64.b64encode(gzip_bomb(GIGABYTE)).decode()
    body = {"stage": "dev", "timestamp": "1", "groupId": "iac-main", "data": data}
    started = time.monotonic()
    assert_error(
        admin_client.post(URL, body, format="json"), 400, "INVALID_REQUEST", mentions="data: decompresses to more than 20971520 bytes"
    )
    assert time.monotonic() - started < 5, "a gigabyte was not inflated"
    assert not SemanticDirective.objects.exists()
