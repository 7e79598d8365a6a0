"""The A2A door through the official `a2a-sdk` client (docs/doors.md, "A2A"): each chat app an
agent with its card, a task a turn, a context a session of the Chat API."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from typing import Any

import httpx
import pytest
from a2a.client import (
    A2ACardResolver,
    A2AClientError,
    AgentCardResolutionError,
    AuthInterceptor,
    Client,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    CredentialService,
    minimal_agent_card,
)
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    InvalidParamsError,
    ListTasksRequest,
    Message,
    Part,
    PushNotificationNotSupportedError,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskPushNotificationConfig,
    TaskState,
    UnsupportedOperationError,
)
from asgiref.sync import sync_to_async

from agents.models import AgentDefinition
from chat.models import ChatMessage, ChatSession
from chat.turn import wait_for_running_turns
from chat.webhooks.models import WebhookDelivery
from tests.conftest import bearer_token
from tests.doors.conftest import BASE_URL, authorized
from tests.factories import ChatAppFactory, ToolDefinitionFactory
from tests.peers import Reply, ToolCall
from tests.servers import ROOT, asgi_server, database_url_of_test_db

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = [f"word{n} " for n in range(100)]
JS_CLIENT = ROOT / "node_modules/@a2a-js/sdk"


class Token(CredentialService):
    """The platform's bearer token, for the card's `bearer` scheme."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(self, security_scheme_name: str, context: Any) -> str | None:
        return self.token if security_scheme_name == "bearer" else None


async def agent(
    http: httpx.AsyncClient, user_id: str = "alice", chat_app_id: str = "support", base_url: str = BASE_URL, **config: Any
) -> Client:
    """The SDK's client of the chat app, from its card, with the user's token on every call."""
    factory = ClientFactory(ClientConfig(httpx_client=http, **config))
    return await factory.create_from_url(
        f"{base_url}/a2a/{chat_app_id}",
        interceptors=[AuthInterceptor(Token(bearer_token(user_id)))],
        resolver_http_kwargs={"headers": authorized(user_id)},
    )


def said(text: str, context_id: str = "", **configuration: Any) -> SendMessageRequest:
    message = Message(message_id=f"m-{text}", role=Role.ROLE_USER, parts=[Part(text=text)], context_id=context_id)
    return SendMessageRequest(message=message, configuration=SendMessageConfiguration(**configuration))


async def sent(client: Client, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def text_of(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)


async def writing(client: Client, task_id: str) -> Task:
    """The task once the model has written its first words (polled: the machine may be slow)."""
    for _ in range(200):
        task = await client.get_task(GetTaskRequest(id=task_id))
        if text_of(task):
            return task
        await asyncio.sleep(0.05)
    raise AssertionError(f"task {task_id} has no text after 10 s")


async def test_the_card_names_the_chat_app_its_skill_streaming_and_the_bearer_scheme(app, http):
    await ChatAppFactory._meta.model.objects.filter(pk="support").aupdate(title="Support", description="Answers support questions.")

    card = await A2ACardResolver(http, f"{BASE_URL}/a2a/support").get_agent_card(http_kwargs={"headers": authorized()})

    assert (card.name, card.description) == ("Support", "Answers support questions.")
    assert card.capabilities.streaming is True
    (interface,) = card.supported_interfaces
    assert (interface.url, interface.protocol_binding, interface.protocol_version) == (f"{BASE_URL}/a2a/support", "JSONRPC", "1.0")
    (skill,) = card.skills
    assert (skill.id, skill.name, skill.description) == ("support", "Support", "Answers support questions.")
    assert list(card.default_input_modes) == list(card.default_output_modes) == ["text/plain"]
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "Bearer"
    assert [list(requirement.schemes) for requirement in card.security_requirements] == [["bearer"]]


async def test_a_sent_message_is_a_completed_task_in_a_session_of_the_chat_api(app, http, openai_server):
    openai_server.script([Reply(text="Hello from the agent.")])
    client = await agent(http, streaming=False)

    (response,) = await sent(client, said("Hi there"))
    await wait_for_running_turns()

    task = response.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [[part.text for part in artifact.parts] for artifact in task.artifacts] == [["Hello from the agent."]]
    assert [(m.role, m.parts[0].text) for m in task.history] == [(Role.ROLE_USER, "Hi there"), (Role.ROLE_AGENT, "Hello from the agent.")]
    answer = await ChatMessage.objects.aget(source="assistant")
    assert (task.id, task.context_id) == (str(answer.pk), str(answer.session_id))
    listed = (await http.get("/api/chat/sessions", headers=authorized())).json()["sessions"]
    assert [(s["sessionId"], s["chatAppId"], s["agentId"]) for s in listed] == [(task.context_id, "support", "helper")]
    messages = (await http.get(f"/api/chat/sessions/{task.context_id}/messages", headers=authorized())).json()["messages"]
    assert [(m["source"], m["message"]) for m in messages] == [("user", "Hi there"), ("assistant", "Hello from the agent.")]


async def test_a_streamed_message_sends_the_task_then_its_text_in_chunks_then_completion(app, http, openai_server):
    openai_server.script([Reply(chunks=["One ", "two ", "three."])])
    client = await agent(http)

    events = await sent(client, said("Count"))
    await wait_for_running_turns()

    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds == ["task", "artifact_update", "artifact_update", "artifact_update", "artifact_update", "status_update"]
    task = events[0].task
    assert task.status.state == TaskState.TASK_STATE_WORKING
    assert [m.parts[0].text for m in task.history] == ["Count"]
    assert [event.artifact_update.artifact.parts[0].text for event in events[1:4]] == ["One ", "two ", "three."]
    for event in events[1:5]:
        append_artifact_to_task(task, event.artifact_update)  # as the SDK's own task manager reads them
    assert text_of(task) == "One two three."
    assert events[4].artifact_update.last_chunk is True
    final = events[-1].status_update
    assert (final.task_id, final.context_id, final.status.state) == (task.id, task.context_id, TaskState.TASK_STATE_COMPLETED)


async def test_a_message_in_a_context_continues_its_session(app, http, openai_server):
    openai_server.script([Reply(text="First answer."), Reply(text="Second answer.")])
    client = await agent(http, streaming=False)

    (first,) = await sent(client, said("First"))
    await wait_for_running_turns()
    (second,) = await sent(client, said("Second", context_id=first.task.context_id))
    await wait_for_running_turns()

    assert second.task.context_id == first.task.context_id
    assert second.task.id != first.task.id
    seen = [(m["role"], m["content"]) for m in openai_server.requests[1]["messages"] if m["role"] != "system"]
    assert seen == [("user", "First"), ("assistant", "First answer."), ("user", "Second")]
    assert await ChatSession.objects.acount() == 1


async def test_an_a2a_session_fires_session_created_and_is_found_by_the_admins_search(app, http, openai_server, settings):
    settings.CHAT_WEBHOOKS = [{"url": "http://127.0.0.1:9/hook", "events": ["session.created"], "secret": "s"}]
    openai_server.script([Reply(text="Hello.")])

    (response,) = await sent(await agent(http, streaming=False), said("Hi"))
    await wait_for_running_turns()

    delivery = await WebhookDelivery.objects.aget()
    assert (delivery.event, str(delivery.session_id)) == ("session.created", response.task.context_id)
    admin = {"Authorization": f"Bearer {bearer_token('ops', admin=True)}"}
    found = await http.post("/api/chat-admin/sessions/search", json={"command": "sessionSearch", "search": {}, "size": 10}, headers=admin)
    assert [session["sessionId"] for session in found.json()["sessions"]] == [response.task.context_id]


async def test_another_users_context_is_refused_and_nothing_is_stored(app, http, openai_server):
    openai_server.script([Reply(text="Alice's answer.")])
    (first,) = await sent(await agent(http, streaming=False), said("Mine"))
    await wait_for_running_turns()

    with pytest.raises(InvalidParamsError, match=f"session {first.task.context_id} not found"):
        await sent(await agent(http, "bob", streaming=False), said("Theirs", context_id=first.task.context_id))

    assert await ChatMessage.objects.acount() == 2


async def test_a_task_is_got_with_its_history_by_its_user_only(app, http, openai_server):
    openai_server.script([Reply(text="Kept answer.")])
    client = await agent(http, streaming=False)
    (response,) = await sent(client, said("Keep this"))
    await wait_for_running_turns()

    task = await client.get_task(GetTaskRequest(id=response.task.id))
    last = await client.get_task(GetTaskRequest(id=response.task.id, history_length=1))

    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert text_of(task) == "Kept answer."
    assert [(m.role, m.parts[0].text) for m in task.history] == [(Role.ROLE_USER, "Keep this"), (Role.ROLE_AGENT, "Kept answer.")]
    assert [m.parts[0].text for m in last.history] == ["Kept answer."]
    with pytest.raises(TaskNotFoundError):
        await (await agent(http, "bob")).get_task(GetTaskRequest(id=response.task.id))
    with pytest.raises(TaskNotFoundError):
        await client.get_task(GetTaskRequest(id="not-a-task"))


async def test_a_task_no_longer_kept_is_told_by_its_stored_answer(app, http, openai_server, settings):
    settings.CHAT_STREAM_REPLAY_SECONDS = 0  # the turn's events are forgotten as soon as it ends
    openai_server.script([Reply(text="Stored answer.")])
    client = await agent(http, streaming=False)
    (response,) = await sent(client, said("Store this"))
    await wait_for_running_turns()

    task = await client.get_task(GetTaskRequest(id=response.task.id))

    assert (task.status.state, text_of(task)) == (TaskState.TASK_STATE_COMPLETED, "Stored answer.")
    assert [m.parts[0].text for m in task.history] == ["Store this", "Stored answer."]


async def test_cancelling_a_task_stops_its_turn_with_the_text_so_far(app, http, openai_server):
    openai_server.script([Reply(chunks=WORDS, token_delay=0.03)])  # three seconds
    client = await agent(http, streaming=False, polling=True)  # returnImmediately: the task as it starts

    (started,) = await sent(client, said("Tell me a long story"))
    running = await writing(client, started.task.id)
    canceled = await client.cancel_task(CancelTaskRequest(id=started.task.id))
    await wait_for_running_turns()

    assert started.task.status.state == running.status.state == TaskState.TASK_STATE_WORKING
    assert text_of(running).startswith("word0 ") and len(text_of(running)) <= len(text_of(canceled))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert text_of(canceled).startswith("word0 ") and not text_of(canceled).endswith("word99 ")
    answer = await ChatMessage.objects.aget(pk=started.task.id)
    assert (answer.message, answer.stop_reason) == (text_of(canceled), "user")
    assert (await client.get_task(GetTaskRequest(id=started.task.id))).status.state == TaskState.TASK_STATE_CANCELED
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(CancelTaskRequest(id=started.task.id))


async def test_a_running_task_is_subscribed_to_as_it_stands_then_as_it_goes_on(app, http, openai_server):
    openai_server.script([Reply(chunks=WORDS[:40], token_delay=0.03)])
    client = await agent(http, streaming=False, polling=True)
    (started,) = await sent(client, said("Tell me a story"))
    await writing(client, started.task.id)

    events = [event async for event in (await agent(http)).subscribe(SubscribeToTaskRequest(id=started.task.id))]
    await wait_for_running_turns()

    task = events[0].task
    assert (task.id, task.status.state) == (started.task.id, TaskState.TASK_STATE_WORKING)
    assert text_of(task).startswith("word0 ") and text_of(task) != "".join(WORDS[:40])
    for event in events[1:-1]:
        append_artifact_to_task(task, event.artifact_update)  # as the SDK's own task manager reads them
    assert text_of(task) == "".join(WORDS[:40])
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    with pytest.raises(UnsupportedOperationError, match="has ended"):
        await anext((await agent(http)).subscribe(SubscribeToTaskRequest(id=started.task.id)))


async def test_a_failed_turn_is_a_failed_task(app, http, openai_server):
    openai_server.script([Reply(status=500)])

    events = await sent(await agent(http), said("Hi"))
    await wait_for_running_turns()

    final = events[-1].status_update
    assert final.status.state == TaskState.TASK_STATE_FAILED
    assert final.status.message.parts[0].text


async def test_a_task_whose_tool_call_waits_for_an_approval_requires_input(app, http, openai_server, settings):
    settings.CHAT_STREAM_REPLAY_SECONDS = 0  # its events forgotten once it ends: getting it reads the stored answer
    await sync_to_async(ToolDefinitionFactory)(tool_id="refunds@1", approval={"required": True})
    await AgentDefinition.objects.filter(pk="helper").aupdate(tool_ids=["refunds@1"])
    openai_server.script([Reply(text="Let me add that.", tool_calls=[ToolCall("add", {"a": 2, "b": 3})])])
    client = await agent(http)

    events = await sent(client, said("Add 2 and 3"))
    await wait_for_running_turns()
    task = await client.get_task(GetTaskRequest(id=events[0].task.id))

    final = events[-1].status_update.status
    assert final.state == task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "approval" in final.message.parts[0].text
    assert text_of(task) == "Let me add that."
    approvals = (await http.get(f"/api/chat/sessions/{task.context_id}/approvals", headers=authorized())).json()["approvals"]
    assert [approval["status"] for approval in approvals] == ["pending"]


async def test_a_part_other_than_text_is_refused_naming_it(app, http):
    client = await agent(http, streaming=False)
    request = said("Look")
    request.message.parts.append(Part(url="https://example.com/cat.png", media_type="image/png"))

    with pytest.raises(InvalidParamsError, match=r"message\.parts\[1\]: only text parts are supported"):
        await sent(client, request)
    assert not await ChatSession.objects.aexists()


async def test_a_chat_app_the_user_may_not_use_is_as_unknown_as_a_missing_one(app, http):
    await sync_to_async(ChatAppFactory)(chat_app_id="secret", user_roles=["staff"], agent__agent_id="hidden")
    await sync_to_async(ChatAppFactory)(chat_app_id="ruled", agent__agent_id="ruled-agent")
    await AgentDefinition.objects.filter(pk="ruled-agent").aupdate(access_rules=[{"condition": '"staff" in user.roles', "effect": "allow"}])
    refusals = []
    for chat_app_id in ("secret", "ruled", "missing"):
        with pytest.raises(AgentCardResolutionError) as card:
            await A2ACardResolver(http, f"{BASE_URL}/a2a/{chat_app_id}").get_agent_card(http_kwargs={"headers": authorized()})
        url = f"{BASE_URL}/a2a/{chat_app_id}"
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(minimal_agent_card(url, ["JSONRPC"]))
        with pytest.raises(A2AClientError, match="HTTP Error 404"):
            await client.send_message(said("Hi"), context=ClientCallContext(service_parameters=authorized())).__anext__()
        raw = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}, headers=authorized())
        refusals.append((card.value.status_code, raw.status_code, raw.json()["error"]["message"].replace(chat_app_id, "X")))

    assert refusals == [(404, 404, "chat app X not found")] * 3
    assert not await ChatSession.objects.aexists()


async def test_without_credentials_the_card_and_the_methods_answer_401(app, http):
    with pytest.raises(AgentCardResolutionError) as card:
        await A2ACardResolver(http, f"{BASE_URL}/a2a/support").get_agent_card()
    url = f"{BASE_URL}/a2a/support"
    client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(minimal_agent_card(url, ["JSONRPC"]))

    with pytest.raises(A2AClientError, match="HTTP Error 401"):
        await client.send_message(said("Hi")).__anext__()
    with pytest.raises(A2AClientError, match="HTTP Error 401"):
        await client.get_task(GetTaskRequest(id="x"))

    assert card.value.status_code == 401
    raw = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}})
    assert raw.status_code == 401 and raw.headers["WWW-Authenticate"].startswith("Bearer")
    assert not await ChatSession.objects.aexists()


async def test_methods_the_agent_does_not_offer_are_refused_as_a2a_errors(app, http):
    client = await agent(http)

    with pytest.raises(UnsupportedOperationError):
        await client.list_tasks(ListTasksRequest())
    with pytest.raises(PushNotificationNotSupportedError):
        await client.create_task_push_notification_config(TaskPushNotificationConfig(task_id="x", url="https://example.com/hook"))
    unknown = await http.post(f"{BASE_URL}/a2a/support", json={"jsonrpc": "2.0", "id": 7, "method": "Dance"}, headers=authorized())
    garbled = await http.post(f"{BASE_URL}/a2a/support", content=b"{not json", headers=authorized())

    assert (unknown.status_code, unknown.json()["id"], unknown.json()["error"]["code"]) == (200, 7, -32601)
    assert (garbled.status_code, garbled.json()["error"]["code"]) == (200, -32700)


async def test_a_request_of_another_protocol_version_is_refused(app, http):
    call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}

    legacy = await http.post(f"{BASE_URL}/a2a/support", json=call, headers={**authorized(), "A2A-Version": "0.3"})

    assert (legacy.status_code, legacy.json()["error"]["code"]) == (200, -32009)  # VersionNotSupportedError
    assert "this agent speaks A2A 1.0" in legacy.json()["error"]["message"]


async def test_a2a_calls_count_against_the_chat_api_rate_limit(app, http, openai_server, settings):
    settings.CHAT_RATE_LIMITS = {**settings.CHAT_RATE_LIMITS, "chat": 2}  # the card, then one message
    settings.CHAT_RATE_LIMIT_WINDOW_SECONDS = 3600  # a minute's window could end between the two
    openai_server.script([Reply(text="Once.")])
    client = await agent(http, streaming=False)

    await sent(client, said("Hi"))
    await wait_for_running_turns()
    with pytest.raises(A2AClientError, match="HTTP Error 429"):
        await sent(client, said("Again"))

    assert await ChatSession.objects.acount() == 1


async def test_a_live_agent_streams_as_the_text_comes_and_a_cancel_from_another_connection_ends_it(app, openai_server):
    openai_server.script([Reply(chunks=WORDS, token_delay=0.03)])  # three seconds of streaming
    env = {"DATABASE_URL": database_url_of_test_db(), "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "k"}
    with asgi_server({**env, "CHAT_TITLE_MODEL": "offline", "LOG_LEVEL": "WARNING"}) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as streaming, httpx.AsyncClient(timeout=60) as other:
            client = await agent(streaming, base_url=server.url)
            events, canceled = [], None
            async for event in client.send_message(said("Tell me a long story")):
                events.append(event)
                if len(events) == 6:  # the task and five chunks, long before the model is done
                    canceled = await (await agent(other, base_url=server.url)).cancel_task(CancelTaskRequest(id=events[0].task.id))

    assert canceled is not None and canceled.status.state == TaskState.TASK_STATE_CANCELED
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
    text = "".join(e.artifact_update.artifact.parts[0].text for e in events if e.HasField("artifact_update"))
    assert text.startswith("word0 word1 word2 word3 word4 ") and not text.endswith("word99 ")
    assert text == text_of(canceled) == (await ChatMessage.objects.aget(pk=events[0].task.id)).message


@pytest.mark.skipif(not JS_CLIENT.exists() or shutil.which("node") is None, reason="the JavaScript client needs Node and `npm ci`")
def test_the_official_javascript_client_streams_sends_in_a_context_and_gets_a_task(app, openai_server):
    openai_server.script([Reply(chunks=["One ", "two."]), Reply(text="Again.")])
    env = {"DATABASE_URL": database_url_of_test_db(), "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "k"}
    with asgi_server({**env, "CHAT_TITLE_MODEL": "offline", "LOG_LEVEL": "WARNING"}) as server:
        script = str(ROOT / "tests/doors/a2a_client.mjs")
        node = [shutil.which("node") or "node", script, f"{server.url}/a2a/support", bearer_token("alice")]
        run = subprocess.run(node, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr

    seen = json.loads(run.stdout)
    completed = 3  # TASK_STATE_COMPLETED
    assert seen["name"] == "Chat app support"
    assert seen["events"] == ["task", "artifactUpdate", "artifactUpdate", "artifactUpdate", f"statusUpdate:{completed}"]
    assert seen["streamed"] == "One two."
    first = ChatMessage.objects.filter(source="assistant").order_by("timestamp").first()
    assert seen["second"] == {"contextId": str(first.session_id), "state": completed, "text": "Again."}
    assert seen["got"] == {"id": str(first.pk), "state": completed, "history": ["Hello", "One two."]}
