"""`directives.selectors.directives_candidates`: the directives a turn may select from (docs/api.md, "The system prompt")."""

from __future__ import annotations

import pytest

from directives.selectors import directives_candidates
from tests.factories import SemanticDirectiveFactory

MATCHING = ["chatapp#support", "agent#helper", "tool#weather@1", "tool#search@2", "entity#acme", "agent#helper#entity#acme"]
DECOYS = ["chatapp#sales", "agent#other", "tool#weather@2", "entity#globex", "agent#other#entity#acme", "agent#helper#entity#globex"]


@pytest.fixture
def everywhere(db):
    for scope in MATCHING + DECOYS:
        SemanticDirectiveFactory(scope=scope, directive_id="one")
    SemanticDirectiveFactory(scope="chatapp#support", directive_id="two")


def test_candidates_are_the_directives_of_the_five_scopes_and_no_others(everywhere, django_assert_num_queries):
    with django_assert_num_queries(1):
        found = directives_candidates(chat_app_id="support", agent_id="helper", tool_ids=["weather@1", "search@2"], entity_value="acme")
    assert sorted((d.scope, d.directive_id) for d in found) == sorted([(s, "one") for s in MATCHING] + [("chatapp#support", "two")])


def test_without_an_entity_value_no_entity_scope_is_a_candidate(everywhere):
    found = directives_candidates(chat_app_id="support", agent_id="helper", tool_ids=[], entity_value=None)
    assert sorted({d.scope for d in found}) == ["agent#helper", "chatapp#support"]


def test_a_value_that_cannot_be_a_scope_part_matches_nothing(everywhere):
    # "acme#x" must not be read as a compound scope; an empty tool id is no scope at all.
    found = directives_candidates(chat_app_id="nobody", agent_id="helper#entity", tool_ids=[""], entity_value="acme#x")
    assert found == []
