"""The Django admin of semantic directives: the API's validation and stamps (one place per rule)."""

from __future__ import annotations

from datetime import UTC, datetime

from directives.models import SemanticDirective
from tests.factories import SemanticDirectiveFactory

ADD = "/admin/directives/semanticdirective/add/"
LIST = "/admin/directives/semanticdirective/"


def form(**fields):
    return {
        "scope": "chatapp#support",
        "directive_id": "answer-in-french",
        "description": "French",
        "instructions": "Answer in French.",
        **fields,
    }


def test_an_invalid_compound_scope_shows_an_error_and_writes_nothing(staff):
    response = staff.post(ADD, form(scope="chatapp#support#tool#weather"))
    assert response.status_code == 200
    assert "the only compound scope is agent followed by entity" in response.content.decode()
    assert response.context["adminform"].form.errors["scope"]
    assert not SemanticDirective.objects.exists()


def test_an_id_that_is_not_kebab_case_shows_the_api_rule(staff):
    response = staff.post(ADD, form(directive_id="Answer_In_French"))
    assert "must be descriptive kebab-case" in str(response.context["adminform"].form.errors["directive_id"])
    assert not SemanticDirective.objects.exists()


def test_a_valid_directive_is_saved_through_the_service_with_stamps(staff):
    response = staff.post(ADD, form(scope="agent#helper#entity#acme"))
    assert response.status_code == 302
    saved = SemanticDirective.objects.get()
    assert (saved.scope_type, saved.scope_value_wire) == ("agent-entity", {"agent": "helper", "entity": "acme"})
    assert saved.created_by == saved.last_updated_by == "staff"


def test_adding_an_existing_scope_and_id_is_refused(staff):
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="answer-in-french")
    response = staff.post(ADD, form())
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert SemanticDirective.objects.count() == 1


def test_a_change_keeps_the_scope_and_refreshes_the_stamps(staff):
    long_ago = datetime(2026, 1, 1, tzinfo=UTC)
    directive = SemanticDirectiveFactory(
        scope="tool#weather@1", directive_id="units", created_by="carol", group_id="iac-main", create_date=long_ago, last_update=long_ago
    )
    response = staff.post(f"{LIST}{directive.pk}/change/", {"description": "metric units", "instructions": "Use metric units."})
    assert response.status_code == 302
    directive.refresh_from_db()
    assert (directive.scope, directive.description, directive.created_by, directive.last_updated_by) == (
        "tool#weather@1",
        "metric units",
        "carol",
        "staff",
    )
    assert directive.group_id == "iac-main"
    assert directive.create_date == long_ago
    assert directive.last_update > long_ago


def test_the_list_filters_and_searches(staff):
    SemanticDirectiveFactory(scope="tool#weather@1", directive_id="units", group_id="iac-main")
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="greet")
    page = staff.get(LIST, {"scope_type": "tool", "q": "units"})
    assert page.status_code == 200
    assert [str(d) for d in page.context["cl"].result_list] == ["tool#weather@1 units"]
    assert staff.get(LIST, {"group_id": "iac-main"}).context["cl"].result_count == 1
    assert staff.get("/admin/directives/directivedeployment/").status_code == 200
