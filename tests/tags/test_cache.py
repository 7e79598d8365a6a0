"""The tag cache (docs/api.md, "Tag definitions", "Limits"): served from the shared cache,
invalidated by every write, bypassed for `dontCacheThis`."""

from __future__ import annotations

import pytest

from tags.models import TagDefinition
from tests.factories import TagDefinitionFactory, tag_payload

CHAT_SEARCH = "/api/chat/tagdef/search"


def descriptions(client):
    response = client.post(CHAT_SEARCH, {}, format="json")
    assert response.status_code == 200, response.json()
    return {d["tag"]: d["description"] for d in response.json()["tagDefinitions"]}


def tag_queries(captured):
    return [q["sql"] for q in captured.captured_queries if "tags_tagdefinition" in q["sql"]]


def test_a_second_chat_search_is_served_from_the_cache(user_client, django_assert_num_queries):
    TagDefinitionFactory(tag="a")
    descriptions(user_client)
    # One query remains: the bearer token's user look-up. None reads tag definitions.
    with django_assert_num_queries(1) as captured:
        assert descriptions(user_client) == {"a": "The a tag"}
    assert tag_queries(captured) == []


def test_the_cache_serves_stale_rows_until_a_write_invalidates_it(user_client, admin_client):
    TagDefinitionFactory(tag="a", description="first")
    assert descriptions(user_client) == {"a": "first"}
    TagDefinition.objects.filter(tag="a").update(description="edited behind the service's back")
    assert descriptions(user_client) == {"a": "first"}  # proves the cache is in use

    admin_client.post("/api/chat-admin/tagdef", {"tagDefinition": tag_payload(tag="b")}, format="json")
    assert descriptions(user_client) == {"a": "edited behind the service's back", "b": "Charts in replies"}


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        (
            lambda client: client.post(
                "/api/chat-admin/tagdef", {"tagDefinition": tag_payload(tag="a", description="rewritten")}, format="json"
            ),
            {"a": "rewritten"},
        ),
        (
            lambda client: client.post("/api/chat-admin/tagdef", {"tagDefinition": tag_payload(tag="a", status="disabled")}, format="json"),
            {},
        ),
        (lambda client: client.delete("/api/chat-admin/tagdef", {"tagDefinition": {"scope": "demo", "tag": "a"}}, format="json"), {}),
        (lambda client: client.post("/api/chat-admin/tagdef/clear-cache", format="json"), {"a": "changed directly"}),
    ],
    ids=["upsert", "disable", "delete", "clear-cache"],
)
def test_every_write_invalidates_the_chat_search(user_client, admin_client, write, expected):
    TagDefinitionFactory(scope="demo", tag="a", description="original")
    assert descriptions(user_client) == {"a": "original"}
    TagDefinition.objects.filter(tag="a").update(description="changed directly")
    assert write(admin_client).status_code == 200
    assert descriptions(user_client) == expected


def test_clear_cache_endpoint_answers_cleared(admin_client):
    response = admin_client.post("/api/chat-admin/tagdef/clear-cache", format="json")
    assert response.status_code == 200
    assert response.json() == {"success": True, "cleared": True}


def test_a_page_holding_a_dont_cache_this_definition_is_read_from_the_database_every_time(user_client):
    TagDefinitionFactory(tag="cached", description="v1")
    TagDefinitionFactory(tag="live", description="v1", dont_cache_this=True)
    assert descriptions(user_client) == {"cached": "v1", "live": "v1"}

    TagDefinition.objects.update(description="v2")
    assert descriptions(user_client) == {"cached": "v2", "live": "v2"}


def test_a_dont_cache_this_definition_disabled_directly_disappears_at_once(user_client):
    TagDefinitionFactory(tag="live", dont_cache_this=True)
    assert list(descriptions(user_client)) == ["live"]
    TagDefinition.objects.update(status="disabled")
    assert descriptions(user_client) == {}


def test_a_zero_lifetime_turns_the_cache_off(user_client, settings):
    settings.CHAT_TAG_CACHE_SECONDS = 0
    TagDefinitionFactory(tag="a", description="v1")
    assert descriptions(user_client) == {"a": "v1"}
    TagDefinition.objects.update(description="v2")
    assert descriptions(user_client) == {"a": "v2"}
