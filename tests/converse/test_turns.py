"""Turns through HTTP (JSON and SSE) and WebSocket: events, storage, usage, verification, titles,
ordering and disconnects, against the scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio

import pytest
from channels.testing import WebsocketCommunicator

from chat.sessions.models import ChatMessage, ChatSession
from chat.turn import wait_for_running_turns
from chat.users.models import ChatUser
from chatplatform.asgi import application
from tests.asgi_client import AsgiClient
from tests.conftest import assert_error, bearer_token
from tests.converse.conftest import MODEL
from tests.converse.helpers import body, converse, converse_sse, parse_sse, read_stream
from tests.factories import ChatAppFactory
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

PRICES = {MODEL: {"input": 0.5, "output": 2.0}, "default": {"input": 0.0, "output": 0.0}}


async def test_the_sse_stream_sends_session_deltas_done_and_title_in_order(app, async_client_for, openai_server):
    openai_server.script([Reply(text="The quick brown fox.")])

    response, events = await converse_sse(async_client_for("alice"), message="Tell me about foxes please")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    assert [name for name, _ in events] == ["session", "delta", "delta", "delta", "delta", "done", "title"]
    session, done, title = events[0][1], events[-2][1], events[-1][1]
    assert "".join(data["text"] for name, data in events if name == "delta") == done["response"] == "The quick brown fox."
    assert set(done) == {"success", "response", "sessionId", "messageId", "usage"}
    assert done["sessionId"] == session["sessionId"] == title["sessionId"]
    assert title["title"] == "Tell me about foxes please"
    stored = await ChatSession.objects.aget(pk=session["sessionId"])
    assert stored.title == "Tell me about foxes please"
    user_message = await ChatMessage.objects.aget(pk=session["userMessageId"])
    assert user_message.message == "Tell me about foxes please" and user_message.source == "user"


async def test_a_quiet_sse_stream_sends_heartbeat_comments_until_the_answer_comes(app, async_client_for, openai_server, monkeypatch):
    monkeypatch.setattr("chat.turn.events.SSE_HEARTBEAT_SECONDS", 0.05)
    openai_server.script([Reply(text="Finally here.", first_token_delay=0.4)])

    response = await async_client_for("alice").post(
        "/api/chat/converse", body(), content_type="application/json", headers={"Accept": "text/event-stream"}
    )
    raw = await read_stream(response)
    await wait_for_running_turns()

    before_answer = raw[raw.index(b"event: session") : raw.index(b"event: delta")]
    assert before_answer.count(b": heartbeat\n\n") >= 3
    events = parse_sse(raw)
    assert "".join(data["text"] for name, data in events if name == "delta") == dict(events)["done"]["response"] == "Finally here."


async def test_the_json_answer_is_the_done_events_fields(app, async_client_for, openai_server):
    openai_server.script([Reply(text="Same answer.")])
    json_response = await converse(async_client_for("alice"))
    openai_server.script([Reply(text="Same answer.")])
    _, events = await converse_sse(async_client_for("alice"))

    done = dict(events)["done"]
    assert set(json_response.json()) == set(done)
    assert json_response.json()["response"] == done["response"] == "Same answer."


async def test_trace_events_are_sent_only_when_the_traces_feature_is_on(app, async_client_for, openai_server, settings):
    openai_server.script([Reply(text="No traces.")])
    _, events = await converse_sse(async_client_for("alice"))
    assert "trace" not in [name for name, _ in events]

    settings.CHAT_SITE_FEATURES = {"traces": {"enabled": True}}
    openai_server.script([Reply(text="Traced.", prompt_tokens=11, completion_tokens=3)])
    _, events = await converse_sse(async_client_for("alice"))
    traces = [data for name, data in events if name == "trace"]
    assert traces == [{"stage": "model", "model": MODEL, "inputTokens": 11, "outputTokens": 3, "durationMs": traces[0]["durationMs"]}]

    openai_server.script([Reply(text="Narrowed.")])
    _, events = await converse_sse(async_client_for("alice"), features={"traces": {"enabled": False}})
    assert "trace" not in [name for name, _ in events]


async def test_usage_and_cost_come_from_the_servers_usage_fields_and_add_up_on_the_session(app, async_client_for, openai_server, settings):
    settings.CHAT_MODEL_PRICES = PRICES
    client = async_client_for("alice")
    openai_server.script([Reply(text="One.", prompt_tokens=1000, completion_tokens=100)])
    first = (await converse(client)).json()
    assert first["usage"] == {
        "inputTokens": 1000,
        "outputTokens": 100,
        "totalTokens": 1100,
        "inputCost": 0.5,
        "outputCost": 0.2,
        "totalCost": 0.7,
    }
    for tokens in (2000, 3000):
        openai_server.script([Reply(text="More.", prompt_tokens=tokens, completion_tokens=10)])
        response = await converse(client, sessionId=first["sessionId"])
        assert response.status_code == 200, response.json()

    session = await ChatSession.objects.aget(pk=first["sessionId"])
    assert (session.input_tokens, session.output_tokens, session.total_tokens) == (6000, 120, 6120)
    assert session.input_cost == pytest.approx(3.0) and session.output_cost == pytest.approx(0.24)
    assert session.total_cost == pytest.approx(3.24)
    answers = [m async for m in ChatMessage.objects.filter(session=session, source="assistant").order_by("timestamp")]
    assert [m.usage["inputTokens"] for m in answers] == [1000, 2000, 3000]
    assert str(session.last_message_id) == str(answers[-1].pk)


async def test_history_reaches_the_model_in_order_on_later_turns(app, async_client_for, openai_server):
    client = async_client_for("alice")
    openai_server.script([Reply(text="Hello Ada.")])
    first = (await converse(client, message="I am Ada.")).json()
    openai_server.script([Reply(text="You are Ada.")])
    await converse(client, sessionId=first["sessionId"], message="Who am I?")

    messages = openai_server.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in messages[1:]] == [
        ("user", "I am Ada."),
        ("assistant", "Hello Ada."),
        ("user", "Who am I?"),
    ]


async def test_verification_grades_the_answer_and_a_bad_grade_reprompts_once(app, async_client_for, openai_server, settings):
    settings.CHAT_MODEL_PRICES = PRICES
    app.features = {"verifyResponse": {"enabled": True, "autoRepromptThreshold": "C"}}
    await app.asave()
    openai_server.script(
        [
            Reply(text="Paris is in Germany.", prompt_tokens=100, completion_tokens=10),
            Reply(text="<grade>F</grade><feedback>Paris is in France.</feedback>", prompt_tokens=50, completion_tokens=5),
            Reply(text="Paris is in France.", prompt_tokens=120, completion_tokens=10),
        ]
    )

    _response, events = await converse_sse(async_client_for("alice"), message="Where is Paris?")

    done = dict(events)["done"]
    assert done["response"] == "Paris is in Germany.\n\n## Corrections\n\nParis is in France."
    assert "".join(data["text"] for name, data in events if name == "delta") == done["response"]
    assert done["usage"]["inputTokens"] == 270 and done["usage"]["outputTokens"] == 25
    grader, reprompt = openai_server.requests[1], openai_server.requests[2]
    assert "Paris is in Germany." in grader["messages"][-1]["content"]
    assert [m["content"] for m in reprompt["messages"][1:3]] == ["Where is Paris?", "Paris is in Germany."]
    assert "Paris is in France." in reprompt["messages"][-1]["content"]
    stored = await ChatMessage.objects.aget(pk=done["messageId"])
    assert stored.verifications == [{"grade": "F", "model": MODEL, "feedback": "Paris is in France.", "reprompted": True}]
    assert [trace["stage"] for trace in stored.traces] == ["model", "verification", "reprompt"]


async def test_a_good_grade_keeps_the_answer_as_it_is(app, async_client_for, openai_server):
    app.features = {"verifyResponse": {"enabled": True, "autoRepromptThreshold": "C"}}
    await app.asave()
    openai_server.script([Reply(text="Paris is in France."), Reply(text="<grade>B</grade><feedback>Fine.</feedback>")])

    response = await converse(async_client_for("alice"))

    assert response.json()["response"] == "Paris is in France."
    assert len(openai_server.requests) == 2
    stored = await ChatMessage.objects.aget(pk=response.json()["messageId"])
    assert stored.verifications[0]["grade"] == "B" and stored.verifications[0]["reprompted"] is False


async def test_a_title_is_generated_with_the_title_model_for_a_new_session_only(app, async_client_for, openai_server, settings):
    settings.CHAT_TITLE_MODEL = MODEL
    openai_server.script([Reply(text="Bake bread like this."), Reply(text='"Baking Bread At Home"')])

    _, events = await converse_sse(async_client_for("alice"), message="How do I bake bread?")

    assert dict(events)["title"]["title"] == "Baking Bread At Home"
    assert "How do I bake bread?" in openai_server.requests[1]["messages"][-1]["content"]

    titled = await ChatSession.objects.acreate(user_id="alice", chat_app_id="support", agent_id="helper", title="Mine")
    openai_server.script([Reply(text="Answer.")])
    _, events = await converse_sse(async_client_for("alice"), sessionId=str(titled.pk))
    assert "title" not in dict(events)
    assert len(openai_server.requests) == 3
    await titled.arefresh_from_db()
    assert titled.title == "Mine"


async def test_a_client_disconnecting_mid_stream_does_not_lose_the_answer(app, async_client_for, openai_server):
    openai_server.script([Reply(text="one two three four five six", token_delay=0.05)])
    response = await async_client_for("alice").post(
        "/api/chat/converse", body(), content_type="application/json", headers={"Accept": "text/event-stream"}
    )
    stream = aiter(response.streaming_content)
    first = parse_sse(await anext(stream))
    assert first[0][0] == "session"
    await stream.aclose()  # the client goes away before the answer is complete

    await wait_for_running_turns()

    answer = await ChatMessage.objects.aget(session_id=first[0][1]["sessionId"], source="assistant")
    assert answer.message == "one two three four five six"


async def test_two_concurrent_turns_on_one_session_are_both_stored_in_arrival_order(app, async_client_for, openai_server):
    client = async_client_for("alice")
    openai_server.script([Reply(text="first answer")])
    session_id = (await converse(client, message="start")).json()["sessionId"]

    def answer(request: dict) -> Reply:
        question = request["messages"][-1]["content"]
        return Reply(text=f"answer to {question}", token_delay=0.02)

    openai_server.script(answer)
    slow = asyncio.create_task(client.post("/api/chat/converse", body(sessionId=session_id, message="q1"), content_type="application/json"))
    await asyncio.sleep(0.05)  # q1 arrives first
    fast = asyncio.create_task(client.post("/api/chat/converse", body(sessionId=session_id, message="q2"), content_type="application/json"))
    responses = await asyncio.gather(slow, fast)
    await wait_for_running_turns()

    assert [r.json()["response"] for r in responses] == ["answer to q1", "answer to q2"]
    stored = [m.message async for m in ChatMessage.objects.filter(session_id=session_id).order_by("timestamp")]
    assert stored == ["start", "first answer", "q1", "answer to q1", "q2", "answer to q2"]
    # The second turn saw the first one's exchange: it ran after it, not beside it.
    assert [m["content"] for m in openai_server.requests[-1]["messages"][1:]] == stored[:5]


async def test_a_websocket_carries_several_turns_with_the_same_events(app, openai_server):
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    connected, _ = await communicator.connect()
    assert connected
    openai_server.script([Reply(text="First reply."), Reply(text="Second reply.")])

    await communicator.send_json_to(body(message="first question here"))
    frames = [await communicator.receive_json_from(timeout=5) for _ in range(5)]
    assert [frame["type"] for frame in frames] == ["session", "delta", "delta", "done", "title"]
    done = frames[3]
    assert "".join(f["text"] for f in frames if f["type"] == "delta") == done["response"] == "First reply."
    assert done["success"] is True and frames[4]["title"] == "first question here"

    await communicator.send_json_to(body(message="again", sessionId=done["sessionId"]))
    frames = [await communicator.receive_json_from(timeout=5) for _ in range(4)]
    assert [frame["type"] for frame in frames] == ["session", "delta", "delta", "done"]
    assert frames[-1]["sessionId"] == done["sessionId"]
    assert await communicator.receive_nothing(timeout=0.1)

    await communicator.send_json_to(body(chatAppId="nope"))
    error = await communicator.receive_json_from(timeout=5)
    assert error == {"type": "error", "success": False, "error": error["error"], "code": "INVALID_CHAT_APP_ID"}
    await communicator.disconnect()


async def test_a_websocket_closed_mid_turn_still_stores_the_answer(app, openai_server):
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    await communicator.connect()
    openai_server.script([Reply(text="a b c d e f", token_delay=0.05)])
    await communicator.send_json_to(body())
    session = await communicator.receive_json_from(timeout=5)
    await communicator.disconnect()

    await wait_for_running_turns()

    answer = await ChatMessage.objects.aget(session_id=session["sessionId"], source="assistant")
    assert answer.message == "a b c d e f"


# --- every 400/403/404 of the turn, in the envelope -------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "mentions"),
    [
        ({"features": None}, "features"),
        ({"source": None}, "source"),
        ({"source": "robot"}, "source"),
        ({"message": "   "}, "message"),
        ({"message": None}, "message"),
        ({"chatAppId": None}, "chatAppId"),
        ({"agentId": 7}, "agentId"),
        ({"features": {"tags": "yes"}}, "features"),
        ({"features": {"unknown": {"enabled": True}}}, "features"),
        ({"invocationMode": "telepathy"}, "invocationMode"),
    ],
)
async def test_an_invalid_body_is_a_400_naming_the_field(app, async_client_for, openai_server, overrides, mentions):
    response = await converse(async_client_for("alice"), **overrides)
    assert_error(response, 400, "INVALID_REQUEST", mentions=mentions)
    _, events = await converse_sse(async_client_for("alice"), **overrides)
    assert events == []
    assert openai_server.requests == []


async def test_every_check_of_the_turn_answers_in_the_envelope_with_its_code(app, async_client_for, openai_server):
    alice = async_client_for("alice")
    await ChatUser.objects.acreate(user_id="bob")
    await ChatUser.objects.aget_or_create(user_id="alice")
    others = await ChatSession.objects.acreate(user_id="bob", chat_app_id="support", agent_id="helper")
    other_app = await ChatSession.objects.acreate(user_id="alice", chat_app_id="elsewhere", agent_id="helper")

    assert_error(await converse(alice, chatAppId="missing"), 404, "INVALID_CHAT_APP_ID")
    assert_error(await converse(alice, agentId="missing"), 404, "INVALID_AGENT_ID")
    for session_id in ("not-a-uuid", "9b2f7f0e-1d5a-4a43-9d1c-000000000000", str(others.pk), str(other_app.pk)):
        assert_error(await converse(alice, sessionId=session_id), 404, "INVALID_SESSION_ID")
    # Nothing of those turns was written: no message, no ticket taken on the sessions they named.
    assert await ChatMessage.objects.acount() == 0
    assert {(s.pk, s.turn_next) async for s in ChatSession.objects.all()} == {(others.pk, 0), (other_app.pk, 0)}
    assert_error(await converse(alice, userId="bob"), 403, "INSUFFICIENT_PERMISSIONS")

    app.enabled = False
    await app.asave()
    assert_error(await converse(alice), 403, "INSUFFICIENT_PERMISSIONS", mentions="disabled")
    app.enabled, app.user_types = True, ["internal-user"]
    await app.asave()
    assert_error(await converse(alice), 403, "INSUFFICIENT_PERMISSIONS")
    assert openai_server.requests == []


async def test_the_sse_path_answers_check_failures_with_their_status_not_a_stream(app, async_client_for):
    response, _events = await converse_sse(async_client_for("alice"), chatAppId="missing")
    assert_error(response, 404, "INVALID_CHAT_APP_ID")
    response = await AsgiClient().post(
        "/api/chat/converse", body(), content_type="application/json", headers={"Accept": "text/event-stream"}
    )
    assert_error(response, 401)


async def test_an_admin_may_converse_for_another_user(app, async_client_for, openai_server):
    openai_server.script([Reply(text="For Bob.")])
    response = await converse(async_client_for("root", admin=True), userId="bob")
    assert response.status_code == 200, response.json()
    session = await ChatSession.objects.aget(pk=response.json()["sessionId"])
    assert session.user_id == "bob"


async def test_a_failing_model_is_an_error_event_and_the_session_stays_usable(app, async_client_for, openai_server):
    client = async_client_for("alice")
    openai_server.script([Reply(text="ok")])
    session_id = (await converse(client)).json()["sessionId"]
    openai_server.script([Reply(status=400)])
    _, events = await converse_sse(client, sessionId=session_id)
    assert [name for name, _ in events] == ["session", "error"]
    assert events[-1][1]["success"] is False and events[-1][1]["code"] == "INTERNAL_ERROR"
    openai_server.script([Reply(status=400)])
    assert_error(await converse(client, sessionId=session_id), 502, "INTERNAL_ERROR", mentions="model provider")
    openai_server.script([Reply(text="back")])
    assert (await converse(client, sessionId=session_id)).json()["response"] == "back"


async def test_the_offline_model_answers_without_any_network(async_client_for, transactional_db):
    await asyncio.to_thread(lambda: ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="offline"))
    response = await converse(async_client_for("alice"), message="ping")
    assert response.json()["response"] == "You said: ping"


async def test_each_turn_over_a_websocket_counts_against_the_chat_budget(app, openai_server, settings, monkeypatch):
    monkeypatch.setattr("chatplatform.api.ratelimit.now", lambda: 1_800_000_010.0)
    settings.CHAT_RATE_LIMITS = {**settings.CHAT_RATE_LIMITS, "chat": 1}
    communicator = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    await communicator.connect()
    openai_server.script([Reply(text="Only once.")])

    await communicator.send_json_to(body())
    frames = [await communicator.receive_json_from(timeout=5) for _ in range(4)]
    assert [frame["type"] for frame in frames] == ["session", "delta", "delta", "done"]
    assert (await communicator.receive_json_from(timeout=5))["type"] == "title"
    await communicator.send_json_to(body(sessionId=frames[-1]["sessionId"]))
    refused = await communicator.receive_json_from(timeout=5)
    assert refused == {"type": "error", "success": False, "error": refused["error"], "code": "RATE_LIMIT_EXCEEDED"}
    await communicator.disconnect()
    await wait_for_running_turns()
    assert len(openai_server.requests) == 1
