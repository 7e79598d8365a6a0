"""The AG-UI door through AG-UI's official client (docs/doors.md, "AG-UI"): `@ag-ui/client`'s
HttpAgent, run by Node against a live platform process, and every event the server sends checked
against the official Python models (`ag_ui.core`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import redis
from ag_ui.core import BaseEvent, EventType, RunAgentInput

from agents.models import AgentDefinition
from chat.approvals.models import ToolApproval
from chat.models import ChatMessage, ChatSession
from chat.webhooks.models import WebhookDelivery
from tests.conftest import bearer_token
from tests.factories import ChatAppFactory, ToolDefinitionFactory
from tests.peers import Reply, ToolCall
from tests.servers import ROOT, ServerProcess, asgi_server, database_url_of_test_db

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.django_db(transaction=True)]

CLIENT = ROOT / "tests" / "doors" / "agui_client.mjs"
NODE_MISSING = (
    "Node or @ag-ui/client is not installed: the AG-UI door's tests with its official client were SKIPPED. Install them: npm ci (Node 20)"
)

# Every AG-UI event class, by its `type` (the models the Python SDK builds its encoder's events from).
EVENT_MODELS: dict[str, type[BaseEvent]] = {
    cls.model_fields["type"].default.value: cls for cls in BaseEvent.__subclasses__() if "type" in cls.model_fields
}


@contextmanager
def platform(openai_server: Any, **settings: str) -> Iterator[ServerProcess]:
    """The platform in a process of its own, on the test's database, on the scripted model."""
    env = {
        "DATABASE_URL": database_url_of_test_db(),
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "k",
        "CHAT_TITLE_MODEL": "offline",
        "CHAT_SITE_FEATURES": "{}",
        **settings,
    }
    with asgi_server(env) as process:
        yield process


@pytest.fixture
def support(transactional_db: None) -> Any:
    """The chat app `support`, whose agent `helper` talks to the scripted model."""
    return ChatAppFactory(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="openai:test-model")


@pytest.fixture
def server(openai_server: Any, support: Any) -> Iterator[ServerProcess]:
    with platform(openai_server) as process:
        yield process


def agent_runs(server: ServerProcess, chat_app_id: str, messages: list[str], *, user_id: str | None = "alice", **spec: Any) -> list[Any]:
    """One HttpAgent run per message, on one thread: what the Node script printed, a line each."""
    if shutil.which("node") is None or not (ROOT / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.skip(NODE_MISSING)
    token = bearer_token(user_id) if user_id else None
    spec = {"url": f"{server.url}/api/ag-ui/{chat_app_id}", "token": token, "messages": messages, **spec}
    done = subprocess.run(["node", str(CLIENT)], input=json.dumps(spec), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def events_of(lines: list[Any], run: int = 0) -> list[dict[str, Any]]:
    """The events the client received in a run, each checked against its `ag_ui.core` model."""
    events = [line["event"] for line in lines if line["run"] == run and "event" in line]
    for event in events:
        EVENT_MODELS[event["type"]].model_validate(event)
    return events


def outcome_of(lines: list[Any], run: int = 0) -> dict[str, Any]:
    return next(line for line in lines if line["run"] == run and "event" not in line)


def sent_events(server: ServerProcess, chat_app_id: str, body: dict[str, Any], user_id: str = "alice") -> list[BaseEvent]:
    """The server's own Server-Sent Events for a run, each parsed by its `ag_ui.core` model."""
    headers = {"Authorization": f"Bearer {bearer_token(user_id)}", "Accept": "text/event-stream"}
    response = httpx.post(f"{server.url}/api/ag-ui/{chat_app_id}", json=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    datas = [line.removeprefix("data: ") for line in response.text.splitlines() if line.startswith("data: ")]
    return [EVENT_MODELS[json.loads(data)["type"]].model_validate_json(data) for data in datas]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def chat_api(server: ServerProcess, path: str, user_id: str = "alice") -> Any:
    response = httpx.get(f"{server.url}/api/chat/{path}", headers={"Authorization": f"Bearer {bearer_token(user_id)}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_runs_on_a_thread_stream_the_answers_and_are_one_session_of_the_chat_api(server, openai_server):
    openai_server.script([Reply(text="Hello from the agent."), Reply(text="Still here.")])
    thread = str(uuid.uuid4())

    lines = agent_runs(server, "support", ["Hi there", "Are you there?"], threadId=thread)

    first, second = events_of(lines, 0), events_of(lines, 1)
    answers = list(ChatMessage.objects.filter(source="assistant").order_by("timestamp"))
    assert types(first) == ["RUN_STARTED", "TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * 4, "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert (first[0]["threadId"], first[-1]["threadId"]) == (thread, thread)
    assert first[0]["runId"] == first[-1]["runId"] != second[0]["runId"]
    assert "".join(e["delta"] for e in first if e["type"] == "TEXT_MESSAGE_CONTENT") == "Hello from the agent."
    assert first[1]["messageId"] == str(answers[0].pk) and first[1]["role"] == "assistant"
    assert first[-1]["result"] == {"sessionId": thread, "messageId": str(answers[0].pk)}
    assert "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT") == "Still here."
    # The client's conversation as it built it from the events.
    conversation = [(m["role"], m["content"]) for m in outcome_of(lines, 1)["messages"]]
    assert conversation == [
        ("user", "Hi there"),
        ("assistant", "Hello from the agent."),
        ("user", "Are you there?"),
        ("assistant", "Still here."),
    ]
    # The model saw the first exchange as the second run's history (the session's stored messages).
    sent = [(m["role"], m["content"]) for m in openai_server.requests[1]["messages"] if m["role"] != "system"]
    assert sent == [("user", "Hi there"), ("assistant", "Hello from the agent."), ("user", "Are you there?")]
    sessions = chat_api(server, "sessions")["sessions"]
    assert [(s["sessionId"], s["chatAppId"], s["agentId"]) for s in sessions] == [(thread, "support", "helper")]
    messages = chat_api(server, f"sessions/{thread}/messages")["messages"]
    assert [(m["source"], m["message"]) for m in messages] == [
        ("user", "Hi there"),
        ("assistant", "Hello from the agent."),
        ("user", "Are you there?"),
        ("assistant", "Still here."),
    ]


def test_a_new_thread_takes_the_earlier_messages_of_the_input_as_its_history(server, openai_server):
    openai_server.script([Reply(text="Paris, still.")])
    thread = str(uuid.uuid4())
    body = RunAgentInput(
        thread_id=thread,
        run_id="run-1",
        messages=[
            {"id": "1", "role": "system", "content": "ignored: the agent's prompt governs"},
            {"id": "2", "role": "user", "content": "Capital of France?"},
            {"id": "3", "role": "assistant", "content": "Paris."},
            {"id": "4", "role": "user", "content": [{"type": "text", "text": "And now?"}]},
        ],
    ).model_dump(by_alias=True, exclude_none=True)

    events = sent_events(server, "support", body)

    assert events[0].type == EventType.RUN_STARTED
    assert events[-1].type == EventType.RUN_FINISHED
    messages = chat_api(server, f"sessions/{thread}/messages")["messages"]
    assert [(m["source"], m["message"]) for m in messages] == [
        ("user", "Capital of France?"),
        ("assistant", "Paris."),
        ("user", "And now?"),
        ("assistant", "Paris, still."),
    ]


def test_the_platforms_tool_calls_are_tool_call_events_with_their_results(server, openai_server):
    ToolDefinitionFactory(tool_id="calc@1")  # add(a, b) → {sum}, run in the sandbox
    AgentDefinition.objects.filter(pk="helper").update(tool_ids=["calc@1"])
    calls, answer = Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3}, id="call_add")]), Reply(text="It is 5.")
    openai_server.script([calls, answer, calls, answer])  # a run through the server's bytes, one through the client
    body = {"threadId": str(uuid.uuid4()), "runId": "run-1", "messages": [{"id": "1", "role": "user", "content": "2+3?"}]}

    sent = sent_events(server, "support", body)
    lines = agent_runs(server, "support", ["And 2+3 again?"])

    answer = ChatMessage.objects.filter(source="assistant").earliest("timestamp")
    assert [event.type.value for event in sent] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    start, args, end, result = sent[1:5]
    assert (start.tool_call_id, start.tool_call_name, start.parent_message_id) == ("call_add", "add", str(answer.pk))
    assert json.loads(args.delta) == {"a": 2, "b": 3} and end.tool_call_id == "call_add"
    assert (result.tool_call_id, json.loads(result.content)) == ("call_add", {"sum": 5})
    assert sent[5].message_id == f"{answer.pk}:2"  # the model's answer after the results: a message of its own
    # The official client builds the call and its result into its messages.
    events = events_of(lines)
    assert "TOOL_CALL_RESULT" in types(events)
    messages = outcome_of(lines)["messages"]
    calls = [call for m in messages if m["role"] == "assistant" for call in m.get("toolCalls", [])]
    assert [(call["function"]["name"], json.loads(call["function"]["arguments"])) for call in calls] == [("add", {"a": 2, "b": 3})]
    assert [json.loads(m["content"]) for m in messages if m["role"] == "tool"] == [{"sum": 5}]
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"] == "It is 5."


QUESTION = {"type": "object", "properties": {"question": {"type": "string"}}}
CONFIRM = {"name": "confirm", "description": "Ask the user to confirm", "parameters": QUESTION}


def test_a_frontend_tool_call_ends_the_run_and_the_next_run_gives_the_model_its_result(server, openai_server):
    ToolDefinitionFactory(tool_id="calc@1")
    AgentDefinition.objects.filter(pk="helper").update(tool_ids=["calc@1"])
    ask = Reply(tool_calls=[ToolCall("confirm", {"question": "Refund 5?"}, id="call_confirm")])
    openai_server.script([ask, Reply(text="Refunded, as you confirmed.")])
    thread = str(uuid.uuid4())

    lines = agent_runs(server, "support", ["Refund me", {"toolResult": "yes"}], threadId=thread, tools=[CONFIRM])

    first, second = events_of(lines, 0), events_of(lines, 1)
    assert types(first) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    assert first[1]["toolCallName"] == "confirm" and json.loads(first[2]["delta"]) == {"question": "Refund 5?"}
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_confirm"]}
    # The model was offered the frontend's tool beside the agent's.
    assert {tool["function"]["name"] for tool in openai_server.requests[0]["tools"]} == {"add", "confirm"}
    # The next run brings the result: the model gets it as the call's result and answers.
    assert types(second)[0] == "RUN_STARTED" and types(second)[-1] == "RUN_FINISHED" and "TOOL_CALL_RESULT" not in types(second)
    assert "".join(e["delta"] for e in second if e["type"] == "TEXT_MESSAGE_CONTENT") == "Refunded, as you confirmed."
    outputs = [(m["tool_call_id"], m["content"]) for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert outputs == [("call_confirm", "yes")]
    conversation = [(m["role"], m.get("content")) for m in outcome_of(lines, 1)["messages"]]
    assert conversation[0] == ("user", "Refund me") and conversation[-2:] == [("tool", "yes"), ("assistant", "Refunded, as you confirmed.")]
    stored = [(m["source"], m["message"]) for m in chat_api(server, f"sessions/{thread}/messages")["messages"]]
    assert stored == [("user", "Refund me"), ("assistant", "Refunded, as you confirmed.")]


def test_a_frontend_tools_result_reaches_the_turn_in_another_process(openai_server, support, redis_url):
    redis.Redis.from_url(redis_url).flushdb()  # the processes' cached users and definitions of an earlier test's database
    ask = Reply(tool_calls=[ToolCall("confirm", {"question": "Sure?"}, id="call_confirm")])
    openai_server.script([ask, Reply(text="Confirmed elsewhere.")])
    thread = str(uuid.uuid4())
    run = {"threadId": thread, "runId": "r1", "tools": [CONFIRM], "messages": [{"id": "1", "role": "user", "content": "Go"}]}
    result = {"id": "2", "role": "tool", "toolCallId": "call_confirm", "content": "yes"}

    with platform(openai_server, REDIS_URL=redis_url) as first, platform(openai_server, REDIS_URL=redis_url) as second:
        asked = sent_events(first, "support", run)
        answered = sent_events(second, "support", {**run, "runId": "r2", "messages": [*run["messages"], result]})

    assert asked[-1].type == EventType.RUN_FINISHED and asked[-1].outcome.pending_tool_call_ids == ["call_confirm"]
    assert answered[0].type == EventType.RUN_STARTED and answered[-1].type == EventType.RUN_FINISHED
    assert "".join(e.delta for e in answered if e.type == EventType.TEXT_MESSAGE_CONTENT) == "Confirmed elsewhere."
    assert [m["content"] for m in openai_server.requests[1]["messages"] if m["role"] == "tool"] == ["yes"]


def test_a_new_message_instead_of_a_frontend_tools_result_ends_the_wait(server, openai_server):
    ask = Reply(tool_calls=[ToolCall("confirm", {"question": "Refund 5?"}, id="call_confirm")])
    openai_server.script([ask, Reply(text="Not refunded, then."), Reply(text="Hello again.")])
    thread = str(uuid.uuid4())

    lines = agent_runs(server, "support", ["Refund me", "Actually, just hi"], threadId=thread, tools=[CONFIRM])

    assert events_of(lines, 0)[-1]["outcome"]["pendingToolCallIds"] == ["call_confirm"]
    assert "".join(e["delta"] for e in events_of(lines, 1) if e["type"] == "TEXT_MESSAGE_CONTENT") == "Hello again."
    outputs = [m["content"] for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert outputs == ["no result: the user sent a new message instead"]
    stored = [(m["source"], m["message"]) for m in chat_api(server, f"sessions/{thread}/messages")["messages"]]
    assert stored == [
        ("user", "Refund me"),
        ("assistant", "Not refunded, then."),
        ("user", "Actually, just hi"),
        ("assistant", "Hello again."),
    ]


def test_a_tool_result_no_call_waits_for_is_400(server, openai_server):
    openai_server.script([Reply(text="Hello.")])
    thread = str(uuid.uuid4())
    agent_runs(server, "support", ["Hi"], threadId=thread)
    body = {
        "threadId": thread,
        "runId": "r2",
        "messages": [{"id": "1", "role": "user", "content": "Hi"}, {"id": "2", "role": "tool", "toolCallId": "call_x", "content": "yes"}],
    }

    response = httpx.post(f"{server.url}/api/ag-ui/support", json=body, headers={"Authorization": f"Bearer {bearer_token('alice')}"})
    refused = httpx.post(f"{server.url}/api/ag-ui/support", json=body, headers={"Authorization": f"Bearer {bearer_token('bob')}"})

    assert response.status_code == 400 and "call_x" in response.json()["error"]
    assert refused.status_code == 404 and refused.json()["code"] == "INVALID_SESSION_ID"


def test_a_call_waiting_for_approval_is_an_interrupt_and_resume_answers_it(server, openai_server):
    ToolDefinitionFactory(tool_id="refunds@1", approval={"required": True})
    AgentDefinition.objects.filter(pk="helper").update(tool_ids=["refunds@1"])
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3}, id="call_add")]), Reply(text="Done: 5.")])

    lines = agent_runs(server, "support", ["Refund 2+3", {"resume": "resolved"}])

    paused, resumed = events_of(lines, 0), events_of(lines, 1)
    approval = ToolApproval.objects.get()
    assert types(paused) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    interrupts = paused[-1]["outcome"]["interrupts"]
    assert [(i["id"], i["reason"]) for i in interrupts] == [(str(approval.pk), "tool_approval")]
    assert "add" in interrupts[0]["message"]
    assert [i["id"] for i in outcome_of(lines, 0)["pendingInterrupts"]] == [str(approval.pk)]
    # The next run answers it: the call runs, its result and the model's answer stream in that run.
    assert approval.status == "approved" and approval.decided_by == "alice"
    assert types(resumed)[:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"] and types(resumed)[-1] == "RUN_FINISHED"
    assert resumed[1]["toolCallId"] == "call_add" and json.loads(resumed[1]["content"]) == {"sum": 5}
    assert "".join(e["delta"] for e in resumed if e["type"] == "TEXT_MESSAGE_CONTENT") == "Done: 5."
    assert "outcome" not in resumed[-1] and outcome_of(lines, 1)["pendingInterrupts"] == []
    answer = ChatMessage.objects.get(source="assistant")
    assert answer.message == "Done: 5."


def test_a_cancelled_interrupt_denies_the_call(server, openai_server):
    ToolDefinitionFactory(tool_id="refunds@1", approval={"required": True})
    AgentDefinition.objects.filter(pk="helper").update(tool_ids=["refunds@1"])
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})]), Reply(text="Not refunded.")])

    lines = agent_runs(server, "support", ["Refund 2+3", {"resume": "cancelled", "payload": {"reason": "too much"}}])

    approval = ToolApproval.objects.get()
    assert (approval.status, approval.reason) == ("denied", "too much")
    assert "".join(e["delta"] for e in events_of(lines, 1) if e["type"] == "TEXT_MESSAGE_CONTENT") == "Not refunded."
    tool_output = [m for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert "refused" in tool_output[0]["content"] and "too much" in tool_output[0]["content"]


def test_a_run_stopped_by_its_user_finishes_cancelled_with_the_text_so_far(server, openai_server):
    openai_server.script([Reply(chunks=[f"word{n} " for n in range(100)], token_delay=0.03)])  # three seconds of text
    thread = str(uuid.uuid4())
    body = {"threadId": thread, "runId": "run-1", "messages": [{"id": "1", "role": "user", "content": "A long story"}]}
    headers = {"Authorization": f"Bearer {bearer_token('alice')}"}
    events = []

    with httpx.stream("POST", f"{server.url}/api/ag-ui/support", json=body, headers=headers, timeout=60) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line.removeprefix("data: "))
                events.append(EVENT_MODELS[event["type"]].model_validate(event))
                if len(events) == 5:
                    stop = httpx.post(f"{server.url}/api/chat/sessions/{thread}/stop", json={}, headers=headers, timeout=30)
                    assert stop.json()["stopped"] is True

    assert events[-1].type == EventType.RUN_FINISHED and events[-1].outcome.type == "cancelled"
    assert events[-2].type == EventType.TEXT_MESSAGE_END
    text = "".join(event.delta for event in events if event.type == EventType.TEXT_MESSAGE_CONTENT)
    answer = ChatMessage.objects.get(source="assistant")
    assert answer.message == text and 3 <= len(text.split()) < 100
    assert answer.stop_reason == "user"


def test_a_failed_turn_ends_the_run_with_run_error(server, openai_server):
    openai_server.script([Reply(status=400, error={"error": {"message": "bad", "type": "invalid_request_error"}})])

    lines = agent_runs(server, "support", ["Hi"])

    events = events_of(lines)
    assert types(events)[0] == "RUN_STARTED"
    assert types(events)[-1] == "RUN_ERROR"
    assert events[-1]["code"] and events[-1]["message"]
    assert "TEXT_MESSAGE_START" not in types(events)


def test_a_chat_app_the_user_may_not_use_is_refused_like_an_unknown_one(server, openai_server):
    ChatAppFactory(chat_app_id="staff-only", user_roles=["staff"])

    hidden = agent_runs(server, "staff-only", ["Hi"])
    unknown = agent_runs(server, "nowhere", ["Hi"])
    raw = httpx.post(
        f"{server.url}/api/ag-ui/staff-only",
        json={"threadId": str(uuid.uuid4()), "runId": "r", "messages": [{"id": "1", "role": "user", "content": "Hi"}]},
        headers={"Authorization": f"Bearer {bearer_token('alice')}"},
    )

    assert "404" in outcome_of(hidden)["error"] and "404" in outcome_of(unknown)["error"]
    assert events_of(hidden) == events_of(unknown) == []
    assert raw.status_code == 404
    assert raw.json() == {"success": False, "error": "chat app staff-only not found", "code": "INVALID_CHAT_APP_ID"}
    assert not ChatSession.objects.exists()
    assert openai_server.requests == []


def test_a_run_counts_against_the_rate_limit_and_its_session_fires_session_created(openai_server, support):
    hook = [{"url": "http://127.0.0.1:9/hook", "events": ["session.created"], "secret": "s"}]
    openai_server.script([Reply(text="Once.")])
    limits = {"chat": 1, "admin": 1000, "tagdef-admin": 100, "tagdef-chat": 1000}
    # An hour's window: a minute's could end between the two runs, and the second would pass.
    with platform(
        openai_server, CHAT_RATE_LIMITS=json.dumps(limits), CHAT_RATE_LIMIT_WINDOW_SECONDS="3600", CHAT_WEBHOOKS=json.dumps(hook)
    ) as server:
        thread = str(uuid.uuid4())
        first = agent_runs(server, "support", ["Hi", "Again"], threadId=thread)
        admin = {"Authorization": f"Bearer {bearer_token('ops', admin=True)}"}
        search = {"command": "sessionSearch", "search": {}, "size": 10}
        found = httpx.post(f"{server.url}/api/chat-admin/sessions/search", json=search, headers=admin, timeout=30)

    assert types(events_of(first, 0))[-1] == "RUN_FINISHED"
    assert "429" in outcome_of(first, 1)["error"]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.event, str(delivery.session_id)) == ("session.created", thread)
    assert [session["sessionId"] for session in found.json()["sessions"]] == [thread]
    assert ChatMessage.objects.count() == 2


def test_no_credentials_is_401(server, openai_server):
    lines = agent_runs(server, "support", ["Hi"], user_id=None)

    assert "401" in outcome_of(lines)["error"]
    assert not ChatSession.objects.exists()


def test_another_users_thread_is_refused(server, openai_server):
    openai_server.script([Reply(text="Bob's answer.")])
    thread = str(uuid.uuid4())
    agent_runs(server, "support", ["Mine"], user_id="bob", threadId=thread)

    lines = agent_runs(server, "support", ["Let me in"], threadId=thread)

    assert "404" in outcome_of(lines)["error"]
    assert ChatMessage.objects.filter(session_id=thread).count() == 2
    assert ChatSession.objects.get().user_id == "bob"


@pytest.mark.parametrize(
    ("change", "field", "rule"),
    [
        ({"threadId": "not-a-uuid"}, "threadId", "must be a UUID"),
        ({"messages": [{"id": "1", "role": "user", "content": "  "}]}, "messages[0]", "must not be blank"),
        ({"messages": [{"id": "1", "role": "user"}]}, "messages[0].content", "Field required"),
        (
            {"messages": [{"id": "1", "role": "user", "content": "Hi"}, {"id": "2", "role": "assistant", "content": "Hello"}]},
            "messages",
            "must end with the user's message",
        ),
    ],
)
def test_an_input_that_is_not_a_run_is_400_naming_the_field(server, openai_server, change, field, rule):
    body = {"threadId": str(uuid.uuid4()), "runId": "r", "messages": [{"id": "1", "role": "user", "content": "Hi"}], **change}

    response = httpx.post(f"{server.url}/api/ag-ui/support", json=body, headers={"Authorization": f"Bearer {bearer_token('alice')}"})

    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_REQUEST"
    assert field in response.json()["error"] and rule in response.json()["error"]
    assert not ChatSession.objects.exists()
