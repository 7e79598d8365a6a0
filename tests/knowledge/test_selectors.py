"""What the turn calls (knowledge.selectors): the knowledge bases of an agent a user may use, and
the search that gives exactly the query endpoint's results, with what a citation needs."""

from __future__ import annotations

import pytest

from knowledge.selectors import search, tool_name, usable_knowledge_bases
from tests.knowledge.conftest import add_text, create_base, query

pytestmark = pytest.mark.django_db

ALICE = {"userId": "alice", "userType": "internal-user", "roles": [], "customData": {"region": "eu"}}
BOB = {"userId": "bob", "userType": "external-user", "roles": [], "customData": {}}


def test_the_bases_a_user_may_use_in_the_agents_order(admin_client):
    create_base(admin_client, "public-faq", description="Answers for customers.")
    create_base(admin_client, "staff-only", accessRules=[{"condition": "user.userType == 'internal-user'", "effect": "allow"}])
    offers = usable_knowledge_bases(knowledge_base_ids=["staff-only", "gone", "public-faq"], user=ALICE)
    assert [offer.knowledge_base_id for offer in offers] == ["staff-only", "public-faq"]
    assert offers[1].description == "Answers for customers." and offers[1].tool_name == "search_public_faq"
    assert offers[1].strategy == "tool" and offers[1].top_k == 5
    assert [offer.knowledge_base_id for offer in usable_knowledge_bases(knowledge_base_ids=["staff-only", "public-faq"], user=BOB)] == [
        "public-faq"
    ]
    assert tool_name("a-b_c") == "search_a_b_c"


def test_search_gives_the_query_endpoints_results_with_their_positions(admin_client):
    create_base(admin_client, "handbook")
    add_text(admin_client, "handbook", "Travel", "# Trains\n\nNight trains are fine.\n\n# Planes\n\nFly economy.", mimeType="text/markdown",
             sourceUrl="https://intra/travel")  # fmt: skip
    (offer,) = usable_knowledge_bases(knowledge_base_ids=["handbook"], user=BOB)
    results = search(knowledge_base=offer, query="night trains")
    assert [result.as_wire() for result in results] == query(admin_client, "handbook", "night trains")
    best = results[0]
    assert (best.knowledge_base_id, best.title, best.source_url, best.heading) == ("handbook", "Travel", "https://intra/travel", "Trains")
    assert best.text == "# Trains\n\nNight trains are fine." and (best.start, best.end, best.page) == (0, 32, None)
    assert search(knowledge_base="handbook", query="night trains", top_k=1) == results[:1]
