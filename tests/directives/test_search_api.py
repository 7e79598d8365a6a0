"""`POST /api/chat-admin/semantic-directive/search` (docs/api.md, "Semantic directives")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import assert_error
from tests.factories import SemanticDirectiveFactory

URL = "/api/chat-admin/semantic-directive/search"
JAN, FEB, MAR = (datetime(2026, month, 1, tzinfo=UTC) for month in (1, 2, 3))


def search(client, **fields):
    response = client.post(URL, fields, format="json")
    assert response.status_code == 200, response.json()
    return response.json()


def ids(body):
    return [d["id"] for d in body["semanticDirectives"]]


@pytest.fixture
def spread(db):
    """Directives spread over scopes, creators, shared ids and three months."""
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="greet", created_by="carol", create_date=JAN, last_update=MAR)
    SemanticDirectiveFactory(scope="agent#helper", directive_id="shared", created_by="dave", create_date=FEB, last_update=FEB)
    SemanticDirectiveFactory(scope="tool#weather@1", directive_id="shared", created_by="carol", create_date=MAR, last_update=MAR)
    SemanticDirectiveFactory(scope="entity#acme", directive_id="polite", created_by="erin", create_date=JAN, last_update=JAN)


def test_scopes_win_over_created_by_and_directive_ids(admin_client, spread):
    body = search(admin_client, scopes=["chatapp#support", "entity#acme"], createdBy="dave", directiveIds=["shared"])
    assert sorted(ids(body)) == ["greet", "polite"]


def test_created_by_wins_over_directive_ids(admin_client, spread):
    assert ids(search(admin_client, createdBy="carol", directiveIds=["polite"])) == ["shared", "greet"]


def test_directive_ids_are_looked_up_across_scopes(admin_client, spread):
    body = search(admin_client, directiveIds=["shared"])
    assert [d["scope"] for d in body["semanticDirectives"]] == ["tool#weather@1", "agent#helper"]


def test_without_a_selector_every_directive_is_returned_newest_first(admin_client, spread):
    body = search(admin_client)
    assert ids(body) == ["shared", "shared", "polite", "greet"]  # equal createDate: the later insert first
    assert [d["createDate"][:7] for d in body["semanticDirectives"]] == ["2026-03", "2026-02", "2026-01", "2026-01"]
    assert body == {"success": True, "semanticDirectives": body["semanticDirectives"]}  # no token: one page


def test_empty_selectors_count_as_absent(admin_client, spread):
    assert ids(search(admin_client, scopes=[], createdBy="", directiveIds=["polite"])) == ["polite"]


def test_a_scope_with_no_directives_finds_nothing(admin_client, spread):
    assert search(admin_client, scopes=["chatapp#nobody"], createdBy="carol")["semanticDirectives"] == []


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"scopes": ["chatapp#support", "agent#helper", "tool#weather@1"]}, ["shared"]),
        ({"createdBy": "carol"}, []),
        ({"directiveIds": ["shared", "greet"]}, ["shared"]),
        ({}, ["shared"]),
    ],
)
def test_created_dates_filter_every_branch(admin_client, spread, selector, expected):
    window = {"createdAfter": "2026-02-01T00:00:00Z", "createdBefore": "2026-03-01T00:00:00Z"}
    assert ids(search(admin_client, **selector, **window)) == expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"scopes": ["chatapp#support", "entity#acme"]}, ["greet"]),
        ({"createdBy": "carol"}, ["shared", "greet"]),
        ({"directiveIds": ["polite", "greet"]}, ["greet"]),
        ({}, ["shared", "greet"]),
    ],
)
def test_updated_dates_filter_every_branch(admin_client, spread, selector, expected):
    assert ids(search(admin_client, **selector, updatedAfter="2026-03-01T00:00:00Z")) == expected


def test_before_bounds_are_exclusive_and_after_bounds_inclusive(admin_client, spread):
    assert sorted(ids(search(admin_client, createdBefore="2026-02-01T00:00:00Z"))) == ["greet", "polite"]
    assert ids(search(admin_client, updatedAfter="2026-02-01", updatedBefore="2026-03-01")) == ["shared"]
    assert ids(search(admin_client, createdAfter="2026-03-01T01:00:00+01:00")) == ["shared"]


@pytest.mark.parametrize("name", ["createdAfter", "createdBefore", "updatedAfter", "updatedBefore"])
@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", 20260101, "2026-01-01T25:00:00Z"])
def test_a_malformed_timestamp_is_refused_naming_the_field(admin_client, db, name, value):
    assert_error(admin_client.post(URL, {name: value}, format="json"), 400, "INVALID_REQUEST", mentions=f"{name}: must be an ISO 8601")


def test_sort_order_asc_returns_oldest_first(admin_client, spread):
    body = search(admin_client, createdBy="carol", sortOrder="asc")
    assert ids(body) == ["greet", "shared"]
    assert ids(search(admin_client, createdBy="carol", sortOrder="desc")) == ["shared", "greet"]


def test_an_unknown_sort_order_is_refused(admin_client, db):
    assert_error(admin_client.post(URL, {"sortOrder": "newest"}, format="json"), 400, mentions="sortOrder: must be asc or desc")


def test_instructions_are_returned_only_with_include_instructions(admin_client, spread):
    without = search(admin_client, scopes=["chatapp#support"])["semanticDirectives"][0]
    assert "instructions" not in without
    assert set(without) == {
        "scope",
        "scopeType",
        "scopeValue",
        "id",
        "description",
        "createDate",
        "lastUpdate",
        "createdBy",
        "lastUpdatedBy",
    }
    with_them = search(admin_client, scopes=["chatapp#support"], includeInstructions=True)["semanticDirectives"][0]
    assert with_them["instructions"] == "Do what greet says."


def test_group_id_and_agent_entity_values_are_shown(admin_client, db):
    SemanticDirectiveFactory(scope="agent#helper#entity#acme", group_id="iac-main")
    wire = search(admin_client)["semanticDirectives"][0]
    assert wire["groupId"] == "iac-main"
    assert (wire["scopeType"], wire["scopeValue"]) == ("agent-entity", {"agent": "helper", "entity": "acme"})


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_pages_follow_each_other_without_gaps_or_repeats(admin_client, db, order):
    # Two directives share each creation time, so the primary key has to break ties.
    for index in range(7):
        SemanticDirectiveFactory(scope="chatapp#paged", create_date=JAN + timedelta(hours=index // 2))
    SemanticDirectiveFactory(scope="chatapp#elsewhere")
    seen, token, pages = [], None, 0
    while True:
        fields = {"scopes": ["chatapp#paged"], "limit": 3, "sortOrder": order}
        if token:
            fields["paginationToken"] = token
        body = search(admin_client, **fields)
        pages += 1
        seen.extend(body["semanticDirectives"])
        token = body.get("paginationToken")
        if token is None:
            break
    assert pages == 3
    assert [len(seen)] == [7] and len({d["id"] for d in seen}) == 7
    keys = [d["createDate"] for d in seen]
    assert keys == sorted(keys, reverse=order == "desc")


def test_a_full_last_page_has_no_token(admin_client, db):
    SemanticDirectiveFactory.create_batch(4, scope="chatapp#even")
    first = search(admin_client, limit=2)
    second = search(admin_client, limit=2, paginationToken=first["paginationToken"])
    assert len(second["semanticDirectives"]) == 2
    assert "paginationToken" not in second


def test_a_forged_pagination_token_is_refused(admin_client, db):
    SemanticDirectiveFactory.create_batch(3)
    token = search(admin_client, limit=1)["paginationToken"]
    for forged in ["not-a-token", token[:-2] + "xx", 12]:
        assert_error(admin_client.post(URL, {"paginationToken": forged}, format="json"), 400, mentions="paginationToken")


def test_a_token_of_another_sort_order_is_refused(admin_client, db):
    SemanticDirectiveFactory.create_batch(3)
    token = search(admin_client, limit=1, sortOrder="desc")["paginationToken"]
    response = admin_client.post(URL, {"paginationToken": token, "sortOrder": "asc"}, format="json")
    assert_error(response, 400, mentions="paginationToken: belongs to a search with another sortOrder")


def test_limit_defaults_to_100(admin_client, db):
    SemanticDirectiveFactory.create_batch(101)
    body = search(admin_client)
    assert len(body["semanticDirectives"]) == 100
    assert "paginationToken" in body


@pytest.mark.parametrize("limit", [0, 1001, -1, "ten", True])
def test_limit_must_be_from_1_to_1000(admin_client, db, limit):
    assert_error(admin_client.post(URL, {"limit": limit}, format="json"), 400, mentions="limit: must be a whole number from 1 to 1000")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"scopes": "chatapp#x"}, "scopes: must be a list of strings"),
        ({"scopes": ["chatapp#x", "chatapp#x#tool#y"]}, "scopes[1]: must be one of"),
        ({"scopes": ["chatapp#x", 3]}, "scopes[1]: must be a non-empty string"),
        ({"directiveIds": [""]}, "directiveIds[0]: must be a non-empty string"),
        ({"directiveIds": [f"d{i}" for i in range(101)]}, "directiveIds: must hold at most 100 items"),
        ({"createdBy": 5}, "createdBy: must be a string"),
    ],
)
def test_malformed_selectors_are_refused_naming_the_field(admin_client, db, fields, named):
    assert_error(admin_client.post(URL, fields, format="json"), 400, "INVALID_REQUEST", mentions=named)
