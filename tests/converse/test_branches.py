"""Branches of a conversation through the Chat API (docs/api.md, "Branches", "Regenerating an
answer"): edit a question, regenerate an answer, list a branch, against the scripted model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from chat.sessions.models import ChatMessage
from chat.turn import wait_for_running_turns
from tests.conftest import assert_error
from tests.converse.helpers import body, converse
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_migration_makes_each_existing_session_one_straight_branch():
    before, after = ("chat", "0015_pins_shares_search"), ("chat", "0016_message_branches")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    try:
        user = old.get_model("chat", "ChatUser").objects.create(user_id="alice", password="!")
        Session, Message = old.get_model("chat", "ChatSession"), old.get_model("chat", "ChatMessage")
        start = timezone.now()
        made = {}
        for name in ("first", "second"):
            session = Session.objects.create(user=user, chat_app_id="support", agent_id="helper")
            # created out of order: the branch follows the messages' times, not their insertion
            for index in (2, 0, 1):
                message = Message.objects.create(
                    session=session,
                    user_id="alice",
                    source="user" if index % 2 == 0 else "assistant",
                    message=f"{name} {index}",
                    timestamp=start + timedelta(seconds=index),
                )
                made[message.pk] = f"{name} {index}"

        executor = MigrationExecutor(connection)
        executor.migrate([after])
        new = executor.loader.project_state([after]).apps
        rows = list(new.get_model("chat", "ChatMessage").objects.values_list("message_id", "parent_id"))
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    parents = {made[key]: made.get(parent) for key, parent in rows}
    assert parents == {
        "first 0": None, "first 1": "first 0", "first 2": "first 1",
        "second 0": None, "second 1": "second 0", "second 2": "second 1",
    }  # fmt: skip


async def _converse(client, **fields):
    """converse's body with these fields, nulls kept (helpers.body drops them)."""
    response = await client.post("/api/chat/converse", {**body(), **fields}, content_type="application/json")
    await wait_for_running_turns()
    return response


async def _ask(client, openai_server, question, answer, **extra):
    """One turn answered `answer`; its converse response."""
    openai_server.script([Reply(text=answer)])
    response = await _converse(client, message=question, **extra)
    assert response.status_code == 200, response.json()
    return response.json()


def _seen(openai_server):
    """What the model was given at its last call: (role, text), the system prompt left out."""
    return [(m["role"], m["content"]) for m in openai_server.requests[-1]["messages"][1:]]


async def _three_turns(client, openai_server):
    first = await _ask(client, openai_server, "Question one?", "Answer one.")
    session_id = first["sessionId"]
    second = await _ask(client, openai_server, "Question two?", "Answer two.", sessionId=session_id)
    third = await _ask(client, openai_server, "Question three?", "Answer three.", sessionId=session_id)
    return session_id, first["messageId"], second["messageId"], third["messageId"]


async def test_editing_the_second_question_gives_the_model_only_the_path_to_it(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, answer_one, answer_two, _ = await _three_turns(client, openai_server)

    edited = await _ask(
        client, openai_server, "Question two, edited?", "Answer two, again.", sessionId=session_id, parentMessageId=answer_one
    )

    assert _seen(openai_server) == [("user", "Question one?"), ("assistant", "Answer one."), ("user", "Question two, edited?")]
    question = await ChatMessage.objects.aget(pk=(await ChatMessage.objects.aget(pk=edited["messageId"])).parent_id)
    original = await ChatMessage.objects.aget(pk=(await ChatMessage.objects.aget(pk=answer_two)).parent_id)
    assert question.message == "Question two, edited?" and str(question.parent_id) == str(original.parent_id) == answer_one

    # Without parentMessageId the conversation goes on from the edited branch, the latest.
    await _ask(client, openai_server, "And then?", "Then this.", sessionId=session_id)
    assert _seen(openai_server)[2:] == [("user", "Question two, edited?"), ("assistant", "Answer two, again."), ("user", "And then?")]


async def test_a_null_parent_starts_the_session_again(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, *_ = await _three_turns(client, openai_server)

    await _ask(client, openai_server, "Start over?", "Started over.", sessionId=session_id, parentMessageId=None)

    assert _seen(openai_server) == [("user", "Start over?")]


async def test_a_parent_that_is_not_an_answer_of_the_session_is_refused_naming_the_field(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, answer_one, _, _ = await _three_turns(client, openai_server)
    other = await _ask(client, openai_server, "Elsewhere?", "Elsewhere.")
    question_one = str((await ChatMessage.objects.aget(pk=answer_one)).parent_id)
    count = await ChatMessage.objects.acount()

    for parent, rule in [
        ("not-a-uuid", "valid UUID"),
        (other["messageId"], "not an assistant message"),  # another session's answer
        (question_one, "not an assistant message"),  # a question, not an answer
    ]:
        response = await converse(client, message="Edited?", sessionId=session_id, parentMessageId=parent)
        assert_error(response, 400, "INVALID_REQUEST", mentions="parentMessageId")
        assert rule in response.json()["error"]
    assert_error(await converse(client, message="Edited?", parentMessageId=answer_one), 400, mentions="parentMessageId")
    assert await ChatMessage.objects.acount() == count  # nothing half-written

    bob = async_client_for("bob")
    assert_error(await converse(bob, message="Mine?", sessionId=session_id, parentMessageId=answer_one), 404, "INVALID_SESSION_ID")
