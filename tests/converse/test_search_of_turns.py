"""A turn's messages and title are searchable as soon as the turn has stored them (docs/api.md,
"Searching one's conversations"): the turn writes its rows with SQL of its own, not the ORM."""

from __future__ import annotations

import pytest

from tests.converse.helpers import converse
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_turns_question_answer_and_title_are_found_at_once(app, async_client_for, openai_server):
    openai_server.script([Reply(text="Pack a light jacket: evenings by the fjords get chilly in June.")])
    client = async_client_for("alice")

    response = await converse(client, message="What should I pack for Norway?")
    session_id = response.json()["sessionId"]

    answer = (await client.request("GET", "/api/chat/sessions/search?q=fjords")).json()["results"]
    assert [(r["sessionId"], r["messageId"]) for r in answer] == [(session_id, response.json()["messageId"])]
    question = (await client.request("GET", "/api/chat/sessions/search?q=pack%20norway")).json()["results"]
    assert {r["messageId"] is None for r in question} == {True, False}  # the title and the question
    assert (await async_client_for("bob").request("GET", "/api/chat/sessions/search?q=fjords")).json()["results"] == []
