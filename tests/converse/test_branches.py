"""Branches of a conversation through the Chat API (docs/api.md, "Branches", "Regenerating an
answer"): edit a question, regenerate an answer, list a branch, against the scripted model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from chat.sessions.models import ChatMessage, ChatSession
from chat.turn import wait_for_running_turns
from chat.users.models import ChatUser
from chatplatform.asgi import application
from tests.asgi_client import AsgiClient
from tests.conftest import assert_error, bearer_token
from tests.converse.helpers import body, converse, parse_sse, read_stream
from tests.converse.test_collaborators import RESEARCHER_PROMPT, _requests_of, _team, by_agent
from tests.factories import ChatMessageFactory, ChatSessionFactory
from tests.peers import Reply, ToolCall

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


async def test_the_messages_list_shows_the_edited_branch_with_both_versions_as_siblings(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, answer_one, answer_two, answer_three = await _three_turns(client, openai_server)
    original = await client.request("GET", f"/api/chat/sessions/{session_id}/messages")
    question_two = original.json()["messages"][2]["messageId"]

    edited = await _ask(
        client, openai_server, "Question two, edited?", "Answer two, again.", sessionId=session_id, parentMessageId=answer_one
    )

    listed = (await client.request("GET", f"/api/chat/sessions/{session_id}/messages")).json()
    messages = listed["messages"]
    assert [m["message"] for m in messages] == ["Question one?", "Answer one.", "Question two, edited?", "Answer two, again."]
    assert listed["leafMessageId"] == edited["messageId"]
    assert [m["parentMessageId"] for m in messages] == [None, *(m["messageId"] for m in messages[:-1])]
    assert messages[2]["siblingIds"] == [question_two, messages[2]["messageId"]]  # oldest first
    assert [len(m["siblingIds"]) for m in messages] == [1, 1, 2, 1]

    # The older branch, by its last message: as it was, its question with the same two siblings.
    older = (await client.request("GET", f"/api/chat/sessions/{session_id}/messages?leafMessageId={answer_three}")).json()
    assert [m["message"] for m in older["messages"]] == [
        "Question one?", "Answer one.", "Question two?", "Answer two.", "Question three?", "Answer three.",
    ]  # fmt: skip
    assert older["leafMessageId"] == answer_three and older["messages"][2]["siblingIds"] == messages[2]["siblingIds"]
    limited = (await client.request("GET", f"/api/chat/sessions/{session_id}/messages?leafMessageId={answer_two}&limit=2")).json()
    assert [m["messageId"] for m in limited["messages"]] == [question_two, answer_two]


async def test_a_version_is_listed_with_what_followed_it_through_its_id(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, answer_one, _, answer_three = await _three_turns(client, openai_server)
    original = (await client.request("GET", f"/api/chat/sessions/{session_id}/messages")).json()["messages"]
    question_two = original[2]["messageId"]
    await _ask(client, openai_server, "Question two, edited?", "Answer two, again.", sessionId=session_id, parentMessageId=answer_one)

    # The first version of question two, down to the newest message that followed it: answer three.
    through = (await client.request("GET", f"/api/chat/sessions/{session_id}/messages?throughMessageId={question_two}")).json()
    assert through["leafMessageId"] == answer_three
    assert [m["message"] for m in through["messages"]][2:] == ["Question two?", "Answer two.", "Question three?", "Answer three."]
    # A message with nothing after it is its own end.
    last = (await client.request("GET", f"/api/chat/sessions/{session_id}/messages?throughMessageId={answer_three}")).json()
    assert last["leafMessageId"] == answer_three

    asked = f"/api/chat/sessions/{session_id}/messages?throughMessageId={question_two}&leafMessageId={answer_one}"
    both = await client.request("GET", asked)
    assert_error(both, 400, "INVALID_REQUEST", mentions="throughMessageId")
    other = await _ask(client, openai_server, "Elsewhere?", "Elsewhere.")
    response = await client.request("GET", f"/api/chat/sessions/{session_id}/messages?throughMessageId={other['messageId']}")
    assert_error(response, 400, "INVALID_REQUEST", mentions="throughMessageId")


async def test_the_messages_list_refuses_a_leaf_of_another_session_and_another_users_session(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, answer_one, _, _ = await _three_turns(client, openai_server)
    other = await _ask(client, openai_server, "Elsewhere?", "Elsewhere.")

    for leaf in (other["messageId"], "not-a-uuid"):
        response = await client.request("GET", f"/api/chat/sessions/{session_id}/messages?leafMessageId={leaf}")
        assert_error(response, 400, "INVALID_REQUEST", mentions="leafMessageId")
    bob = async_client_for("bob")
    response = await bob.request("GET", f"/api/chat/sessions/{session_id}/messages?leafMessageId={answer_one}")
    assert_error(response, 404, "INVALID_SESSION_ID")


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


def _regenerate_path(session_id, message_id):
    return f"/api/chat/sessions/{session_id}/messages/{message_id}/regenerate"


async def _regenerate(client, openai_server, session_id, message_id, answer, **headers):
    openai_server.script([Reply(text=answer)])
    response = await client.post(_regenerate_path(session_id, message_id), {}, content_type="application/json", headers=headers)
    return response


async def test_regenerating_twice_makes_three_sibling_answers_to_the_same_question(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, _, answer_two, _ = await _three_turns(client, openai_server)
    before = await ChatSession.objects.aget(pk=session_id)

    response = await _regenerate(client, openai_server, session_id, answer_two, "Answer two, take two.")
    await wait_for_running_turns()
    again = response.json()
    assert response.status_code == 200 and set(again) == {"success", "response", "sessionId", "messageId", "usage"}
    assert again["response"] == "Answer two, take two." and again["sessionId"] == session_id
    assert _seen(openai_server) == [("user", "Question one?"), ("assistant", "Answer one."), ("user", "Question two?")]

    response = await _regenerate(client, openai_server, session_id, answer_two, "Answer two, take three.", Accept="text/event-stream")
    events = parse_sse(await read_stream(response))
    await wait_for_running_turns()
    names = [name for name, _ in events]
    assert names[0] == "session" and names[-1] == "done"
    third = dict(events)["done"]["messageId"]

    question = (await ChatMessage.objects.aget(pk=answer_two)).parent_id
    assert dict(events)["session"]["userMessageId"] == str(question)
    siblings = [str(pk) async for pk in ChatMessage.objects.filter(parent_id=question).order_by("timestamp").values_list("pk", flat=True)]
    assert siblings == [answer_two, again["messageId"], third]
    assert await ChatMessage.objects.filter(session_id=session_id, source="user").acount() == 3  # no question stored again
    after = await ChatSession.objects.aget(pk=session_id)
    assert after.total_tokens > before.total_tokens and str(after.last_message_id) == third  # usage counted as a turn's


async def test_regenerate_on_the_websocket_answers_with_the_turns_frames(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, _, answer_two, _ = await _three_turns(client, openai_server)
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await communicator.connect())[0]
    openai_server.script([Reply(text="Over the socket.")])

    await communicator.send_json_to({"action": "regenerate", "sessionId": session_id, "messageId": answer_two})
    frames = []
    while not frames or frames[-1]["type"] not in ("done", "error"):
        frames.append(await communicator.receive_json_from(timeout=5))
    await communicator.disconnect()
    await wait_for_running_turns()

    assert frames[0]["type"] == "session" and frames[-1]["type"] == "done" and frames[-1]["response"] == "Over the socket."
    answer = await ChatMessage.objects.aget(pk=frames[-1]["messageId"])
    assert answer.parent_id == (await ChatMessage.objects.aget(pk=answer_two)).parent_id


async def test_regenerate_is_not_found_for_another_users_session_or_a_message_that_is_no_answer(app, async_client_for, openai_server):
    client = async_client_for("alice")
    session_id, answer_one, _, _ = await _three_turns(client, openai_server)
    question_one = (await ChatMessage.objects.aget(pk=answer_one)).parent_id
    count = await ChatMessage.objects.acount()
    bob = async_client_for("bob")

    assert_error(await _regenerate(bob, openai_server, session_id, answer_one, "Not yours."), 404, "INVALID_SESSION_ID")
    assert_error(await _regenerate(AsgiClient(), openai_server, session_id, answer_one, "Nobody's."), 401)
    assert_error(await _regenerate(client, openai_server, session_id, question_one, "A question."), 404, "NOT_FOUND")
    assert_error(await _regenerate(client, openai_server, session_id, "not-a-uuid", "Nothing."), 404, "NOT_FOUND")
    bobs = await _ask(bob, openai_server, "Bob's question?", "Bob's answer.")
    assert_error(await _regenerate(client, openai_server, session_id, bobs["messageId"], "Not mine."), 404, "NOT_FOUND")
    assert_error(await _regenerate(client, openai_server, bobs["sessionId"], bobs["messageId"], "Not mine."), 404, "INVALID_SESSION_ID")
    await wait_for_running_turns()
    assert await ChatMessage.objects.acount() == count + 2  # only Bob's own turn


@pytest.mark.django_db(transaction=True)
def test_the_django_admin_shows_which_message_each_one_follows():
    staff = ChatUser.objects.create_superuser("operator")
    ChatUser.objects.create_user("alice")
    question = ChatMessageFactory(session=ChatSessionFactory(), message="A question.")
    first = ChatMessageFactory(session=question.session, source="assistant", message="First answer.")
    second = ChatMessageFactory(session=question.session, source="assistant", message="Second answer.", parent=question)
    client = Client()
    client.force_login(staff)

    html = client.get(f"/admin/chat/chatsession/{question.session_id}/change/").content.decode()

    assert "follows" in html and "– (start)" in html
    assert html.count(f">{str(question.pk)[:8]}<") == 3  # its own id, and followed by both answers
    assert first.parent_id == second.parent_id == question.pk


async def test_an_older_previous_response_id_forks_the_session_at_that_response(app, async_client_for, openai_server):
    client = async_client_for("alice")

    async def respond(text, answer, previous=None):
        openai_server.script([Reply(text=answer)])
        request = {"model": "support", "input": text, **({"previous_response_id": previous} if previous else {})}
        response = await client.post("/v1/responses", request, content_type="application/json")
        await wait_for_running_turns()
        assert response.status_code == 200, response.json()
        return response.json()["id"]

    first = await respond("My car is blue.", "Blue, noted.")
    await respond("It is old too.", "Old, noted.", first)
    forked = await respond("What colour is it?", "Blue.", first)

    assert _seen(openai_server) == [("user", "My car is blue."), ("assistant", "Blue, noted."), ("user", "What colour is it?")]
    question = await ChatMessage.objects.aget(pk=(await ChatMessage.objects.aget(pk=forked)).parent_id)
    assert str(question.parent_id) == first


async def test_a_collaborator_relayed_the_history_gets_the_branch_only(app, async_client_for, openai_server):
    await sync_to_async(_team)(researcher_relay="TO_COLLABORATOR")
    client = async_client_for("alice")
    first = await _ask(client, openai_server, "My dock is seven.", "Noted: your dock is seven.")
    await _ask(client, openai_server, "No, it is nine.", "Noted: nine.", sessionId=first["sessionId"])
    openai_server.script(
        by_agent(
            supervisor=[Reply(tool_calls=[ToolCall("researcher", {"request": "Which dock?"})]), Reply(text="Dock seven.")],
            researcher=Reply(text="Seven."),
        )
    )

    # The second question edited: the correction is on another branch now.
    await _converse(client, message="Which dock is mine?", sessionId=first["sessionId"], parentMessageId=first["messageId"])

    (nested,) = _requests_of(openai_server, RESEARCHER_PROMPT)
    contents = [message["content"] for message in nested["messages"][1:]]
    assert contents == ["My dock is seven.", "Noted: your dock is seven.", "Which dock is mine?", "Which dock?"]
