"""`POST` and `DELETE /api/chat-admin/semantic-directive` (docs/api.md, "Semantic directives")."""

from __future__ import annotations

from datetime import datetime

import pytest

from directives.models import SemanticDirective
from tests.conftest import assert_error

URL = "/api/chat-admin/semantic-directive"
WIRE_FIELDS = {
    "scope",
    "scopeType",
    "scopeValue",
    "id",
    "description",
    "instructions",
    "createDate",
    "lastUpdate",
    "createdBy",
    "lastUpdatedBy",
}


def directive(**fields):
    return {"id": "answer-in-french", "description": "when the user writes French", "instructions": "Answer in French.", **fields}


def upsert(client, user_id=None, **fields):
    body = {"semanticDirective": directive(**fields)}
    if user_id is not None:
        body["userId"] = user_id
    return client.post(URL, body, format="json")


FORMS = [
    ("chatapp", "support", "chatapp#support", "support"),
    ("agent", 42, "agent#42", "42"),
    ("tool", "weather@1", "tool#weather@1", "weather@1"),
    ("entity", 7.0, "entity#7", "7"),
    (
        "agent-entity",
        {"agent": "helper", "entity": "acme corp"},
        "agent#helper#entity#acme corp",
        {"agent": "helper", "entity": "acme corp"},
    ),
]


@pytest.mark.parametrize(("scope_type", "scope_value", "scope", "wire_value"), FORMS)
def test_each_scope_form_is_built_from_scope_type_and_scope_value(admin_client, scope_type, scope_value, scope, wire_value):
    response = upsert(admin_client, scopeType=scope_type, scopeValue=scope_value)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["success"] is True
    assert body["semanticDirective"]["scope"] == scope
    assert body["semanticDirective"]["scopeType"] == scope_type
    assert body["semanticDirective"]["scopeValue"] == wire_value
    assert SemanticDirective.objects.get().scope == scope


@pytest.mark.parametrize(("scope_type", "scope_value", "scope", "wire_value"), FORMS)
def test_each_scope_form_is_parsed_from_a_scope_string(admin_client, scope_type, scope_value, scope, wire_value):
    body = upsert(admin_client, scope=scope).json()
    assert body["semanticDirective"]["scopeType"] == scope_type
    assert body["semanticDirective"]["scopeValue"] == wire_value
    stored = SemanticDirective.objects.get()
    assert (stored.scope, stored.scope_type) == (scope, scope_type)


def test_a_number_scope_value_with_a_fraction_keeps_it(admin_client):
    assert upsert(admin_client, scopeType="chatapp", scopeValue=2.5).json()["semanticDirective"]["scope"] == "chatapp#2.5"


def test_a_directive_read_back_with_all_three_scope_fields_is_accepted(admin_client):
    read = upsert(admin_client, scopeType="agent-entity", scopeValue={"agent": "a1", "entity": 9}).json()["semanticDirective"]
    again = admin_client.post(URL, {"semanticDirective": {**read, "description": "changed"}}, format="json")
    assert again.status_code == 200, again.json()
    assert SemanticDirective.objects.get().description == "changed"


@pytest.mark.parametrize(
    "scope",
    [
        "chatapp#x#tool#y",
        "agent#a#tool#t",
        "entity#e#agent#a",
        "chatapp#c#entity#e",
        "agent#a#entity",
        "agent#a#entity#e#x",
        "agent-entity#a",
        "user#1",
        "chatapp",
        "chatapp#",
        "agent##entity#e",
        "agent#a#entity# ",
        "",
    ],
)
def test_an_invalid_scope_string_is_refused_naming_the_scope_and_nothing_is_written(admin_client, scope):
    body = {"semanticDirective": directive(scope=scope)}
    if scope == "":
        body["semanticDirective"].pop("scope")  # an empty scope is absent: scopeType is then required
    response = admin_client.post(URL, body, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="semanticDirective.scope")
    assert not SemanticDirective.objects.exists()


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (
            {"scopeType": "user", "scopeValue": "x"},
            "semanticDirective.scopeType: must be one of chatapp, agent, tool, entity, agent-entity",
        ),
        ({"scopeType": "chatapp", "scopeValue": "a#b"}, "semanticDirective.scopeValue: must not contain '#'"),
        ({"scopeType": "chatapp", "scopeValue": ""}, "semanticDirective.scopeValue: must not be empty"),
        ({"scopeType": "chatapp", "scopeValue": "   "}, "semanticDirective.scopeValue: must not be empty"),
        ({"scopeType": "chatapp", "scopeValue": True}, "semanticDirective.scopeValue: must be a string or a number"),
        ({"scopeType": "chatapp", "scopeValue": {"agent": "a", "entity": "e"}}, "semanticDirective.scopeValue: must be a string"),
        ({"scopeType": "chatapp", "scopeValue": "x" * 201}, "semanticDirective.scopeValue: must be at most 200 characters"),
        ({"scopeType": "chatapp"}, "semanticDirective.scopeValue: is required"),
        ({"scopeValue": "x"}, "semanticDirective.scopeType: is required"),
        ({"scopeType": "agent-entity", "scopeValue": "a"}, "semanticDirective.scopeValue: must be an object {agent, entity}"),
        ({"scopeType": "agent-entity", "scopeValue": {"agent": "a"}}, "semanticDirective.scopeValue: must be an object {agent, entity}"),
        ({"scopeType": "agent-entity", "scopeValue": {"agent": "a", "entity": "x#y"}}, "semanticDirective.scopeValue.entity: must not"),
        ({"scopeType": "agent-entity", "scopeValue": {"agent": "", "entity": "e"}}, "semanticDirective.scopeValue.agent: must not be"),
        ({"scope": "agent#a", "scopeType": "tool"}, "semanticDirective.scope: is a agent scope but scopeType is tool"),
        ({"scope": "agent#a", "scopeValue": "b"}, "semanticDirective.scope: does not match scopeValue"),
        ({"scope": 12}, "semanticDirective.scope: must be a string"),
    ],
)
def test_a_malformed_scope_type_or_value_is_refused_naming_the_field(admin_client, fields, named):
    assert_error(upsert(admin_client, **fields), 400, "INVALID_REQUEST", mentions=named)
    assert not SemanticDirective.objects.exists()


@pytest.mark.parametrize("directive_id", ["answer-in-french", "a", "v2", "step-1-of-3", "x" * 128])
def test_a_kebab_case_id_is_accepted(admin_client, directive_id):
    response = upsert(admin_client, scope="chatapp#c", id=directive_id)
    assert response.status_code == 200, response.json()
    assert response.json()["semanticDirective"]["id"] == directive_id


@pytest.mark.parametrize("directive_id", ["Answer", "answer_in_french", "-a", "a-", "a--b", "a b", "ünïcode", "x" * 129, "", 12])
def test_an_id_that_is_not_kebab_case_is_refused(admin_client, directive_id):
    assert_error(upsert(admin_client, scope="chatapp#c", id=directive_id), 400, "INVALID_REQUEST", mentions="semanticDirective.id")
    assert not SemanticDirective.objects.exists()


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"description": "x" * 2001}, "semanticDirective.description: must be at most 2000 characters"),
        ({"instructions": "x" * 20001}, "semanticDirective.instructions: must be at most 20000 characters"),
        ({"description": ""}, "semanticDirective.description: must not be blank"),
        ({"instructions": "  \n "}, "semanticDirective.instructions: must not be blank"),
        ({"description": None}, "semanticDirective.description: must not be null"),
    ],
)
def test_description_and_instructions_are_required_and_bounded(admin_client, fields, named):
    assert_error(upsert(admin_client, scope="chatapp#c", **fields), 400, mentions=named)


def test_a_missing_field_is_named(admin_client):
    response = admin_client.post(URL, {"semanticDirective": {"scope": "chatapp#c", "id": "x"}}, format="json")
    assert_error(response, 400, mentions="semanticDirective.description: is required")


def test_the_longest_description_and_instructions_are_accepted(admin_client):
    response = upsert(admin_client, scope="chatapp#c", description="d" * 2000, instructions="i" * 20000)
    assert response.status_code == 200


@pytest.mark.parametrize("body", [{}, {"semanticDirective": "chatapp#c"}, {"semanticDirective": [1]}, {"semanticDirective": None}])
def test_a_body_without_a_directive_object_is_refused(admin_client, body):
    assert_error(admin_client.post(URL, body, format="json"), 400, "INVALID_REQUEST", mentions="semanticDirective")


def test_create_returns_the_directive_with_service_stamps(admin_client):
    body = upsert(admin_client, user_id="carol", scope="chatapp#support").json()
    wire = body["semanticDirective"]
    assert set(body) == {"success", "semanticDirective"}
    assert set(wire) == WIRE_FIELDS
    assert wire["createdBy"] == wire["lastUpdatedBy"] == "carol"
    assert wire["createDate"] == wire["lastUpdate"]
    assert wire["createDate"].endswith("Z")


def test_stamps_default_to_the_caller(admin_client):
    wire = upsert(admin_client, scope="chatapp#support").json()["semanticDirective"]
    assert wire["createdBy"] == wire["lastUpdatedBy"] == "root-admin"


def test_the_same_scope_and_id_updates_keeping_create_date_and_created_by(admin_client):
    first = upsert(admin_client, user_id="carol", scope="chatapp#support").json()["semanticDirective"]
    second = upsert(admin_client, user_id="dave", scope="chatapp#support", instructions="Reply in French.").json()["semanticDirective"]
    assert SemanticDirective.objects.count() == 1
    assert second["createDate"] == first["createDate"]
    assert datetime.fromisoformat(second["lastUpdate"]) > datetime.fromisoformat(first["lastUpdate"])
    assert (second["createdBy"], second["lastUpdatedBy"], second["instructions"]) == ("carol", "dave", "Reply in French.")


def test_the_same_id_in_another_scope_is_another_directive(admin_client):
    upsert(admin_client, scope="chatapp#support")
    upsert(admin_client, scopeType="agent", scopeValue="support")
    assert sorted(SemanticDirective.objects.values_list("scope", flat=True)) == ["agent#support", "chatapp#support"]


def test_client_stamps_and_group_id_are_ignored(admin_client):
    sent = directive(
        scope="chatapp#support",
        createdBy="mallory",
        lastUpdatedBy="mallory",
        createDate="2000-01-01T00:00:00Z",
        lastUpdate="2000-01-01T00:00:00Z",
        groupId="stolen-group",
    )
    wire = admin_client.post(URL, {"semanticDirective": sent, "userId": "carol"}, format="json").json()["semanticDirective"]
    assert wire["createdBy"] == wire["lastUpdatedBy"] == "carol"
    assert not wire["createDate"].startswith("2000")
    assert "groupId" not in wire
    assert SemanticDirective.objects.get().group_id is None


def test_delete_by_scope_and_id_removes_the_directive(admin_client):
    upsert(admin_client, scope="agent#helper#entity#acme")
    upsert(admin_client, scope="agent#helper#entity#acme", id="keep-me")
    body = {"semanticDirective": {"scope": "agent#helper#entity#acme", "id": "answer-in-french"}, "userId": "carol"}
    response = admin_client.delete(URL, body, format="json")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert list(SemanticDirective.objects.values_list("directive_id", flat=True)) == ["keep-me"]


def test_delete_by_scope_type_and_value_removes_the_directive(admin_client):
    upsert(admin_client, scope="agent#helper#entity#acme")
    key = {"scopeType": "agent-entity", "scopeValue": {"agent": "helper", "entity": "acme"}, "id": "answer-in-french"}
    assert admin_client.delete(URL, {"semanticDirective": key}, format="json").json() == {"success": True}
    assert not SemanticDirective.objects.exists()


def test_delete_of_an_absent_directive_is_404_naming_scope_and_id(admin_client):
    upsert(admin_client, scope="chatapp#support")
    response = admin_client.delete(URL, {"semanticDirective": {"scope": "chatapp#other", "id": "answer-in-french"}}, format="json")
    body = assert_error(response, 404, "NOT_FOUND", mentions="chatapp#other")
    assert "answer-in-french" in body["error"]
    assert SemanticDirective.objects.count() == 1


def test_delete_with_an_invalid_scope_is_400(admin_client):
    response = admin_client.delete(URL, {"semanticDirective": {"scope": "chatapp#x#tool#y", "id": "a"}}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="semanticDirective.scope")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", URL),
        ("delete", URL),
        ("post", URL + "/search"),
        ("post", URL + "/deploy"),
    ],
)
def test_a_non_admin_is_refused_with_403(user_client, anon_client, method, path):
    body = {"semanticDirective": directive(scope="chatapp#c")}
    assert_error(getattr(user_client, method)(path, body, format="json"), 403, "INSUFFICIENT_PERMISSIONS", mentions="semantic directives")
    assert_error(getattr(anon_client, method)(path, body, format="json"), 401)
    assert not SemanticDirective.objects.exists()


def test_every_directive_endpoint_is_in_the_openapi_document(anon_client, db):
    schema = anon_client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert {"post", "delete"} <= set(paths[URL])
    delete_body = paths[URL]["delete"]["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "semanticDirective" in schema["components"]["schemas"][delete_body]["properties"]
    assert "post" in paths[URL + "/search"]
    assert "post" in paths[URL + "/deploy"]
