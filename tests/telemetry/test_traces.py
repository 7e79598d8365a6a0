"""Every turn one OpenTelemetry trace (docs/deploy.md, "Traces"): a server process exporting to a
loopback OTLP/HTTP receiver; the span tree of a turn with a directive, a knowledge base search, a
tool call, a collaborator and verification; message content only when asked for; an incoming
`traceparent` parents the turn and the model server sees the trace's `traceparent`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import httpx
import openai
import pytest
from django.core.management import call_command
from websockets.sync.client import connect

from agents.models import AgentDefinition
from tests.conftest import bearer_token
from tests.factories import AgentFactory, ChatAppFactory, SemanticDirectiveFactory, ToolDefinitionFactory
from tests.knowledge.conftest import add_text, create_base
from tests.peers import Reply, ToolCall
from tests.peers.mcp_server import McpPeer, shared_mcp_peer
from tests.peers.otlp_receiver import OtlpReceiver, Span
from tests.peers.webhook_receiver import WebhookReceiver
from tests.servers import ServerProcess, asgi_server, database_url_of_test_db
from tools.models import ExecutionType

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"), pytest.mark.django_db(transaction=True)]

ALICE = {"Authorization": f"Bearer {bearer_token('alice')}"}
FEATURES = {"instructionAugmentation": {"enabled": True}, "verifyResponse": {"enabled": True}}
QUESTION = "Where do Saturday deliveries leave from?"
ANSWER = "From dock seven, and 2 + 3 is 5."
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as receiver:
        yield receiver


@pytest.fixture
def mcp_peer() -> Iterator[McpPeer]:
    peer = shared_mcp_peer()
    peer.reset()
    peer.require_token = False
    yield peer
    peer.reset()


@pytest.fixture
def platform(openai_server: Any, receiver: OtlpReceiver, mcp_peer: McpPeer, admin_client: Any) -> dict[str, str]:
    """The `support` chat app: agent `helper` with a directive, the MCP server's `add` tool, the
    `handbook` knowledge base (searched through its function) and the collaborator `writer`."""
    tool = ToolDefinitionFactory(tool_id="add@1", execution_type=ExecutionType.MCP, code="", url=mcp_peer.url)
    writer = AgentFactory(agent_id="writer", foundation_model="openai:writer-model")
    helper = AgentFactory(
        agent_id="helper",
        foundation_model="openai:test-model",
        tool_ids=[tool.pk],
        collaborators=[{"agentId": writer.pk, "instruction": "Ask the writer to draft text.", "historyRelay": "TO_AGENT"}],
    )
    ChatAppFactory(chat_app_id="support", agent=helper, features=FEATURES)
    SemanticDirectiveFactory(scope="agent#helper", directive_id="be-brief", instructions="Be brief.")
    create_base(admin_client)
    assert add_text(admin_client, "handbook", "Deliveries", "Saturday deliveries leave from dock seven.").status_code == 200
    AgentDefinition.objects.filter(pk="helper").update(knowledge_bases=[{"id": "handbook"}])
    return {
        "DATABASE_URL": database_url_of_test_db(),
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "k",
        "CHAT_TITLE_MODEL": "offline",
        "CHAT_SELECTION_MODEL": "openai:selection-model",
        "CHAT_VERIFICATION_MODEL": "openai:grader-model",
        "CHAT_SITE_FEATURES": json.dumps(FEATURES),
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_SERVICE_NAME": "chat-under-test",
    }


def script(openai_server: Any) -> None:
    openai_server.script(
        [
            Reply(text='<answer>["be-brief"]</answer>'),  # directive selection
            Reply(
                tool_calls=[
                    ToolCall("add", {"a": 2, "b": 3}, id="call_add"),
                    ToolCall("search_handbook", {"query": "Saturday deliveries"}, id="call_kb"),
                    ToolCall("writer", {"request": "Draft one line about docks."}, id="call_writer"),
                ]
            ),
            Reply(text="Docks are where trucks meet the warehouse."),  # the writer's own model call
            Reply(text=ANSWER),
            Reply(text="<grade>A</grade><feedback>Fine.</feedback>"),  # verification
        ]
    )


def converse(server: ServerProcess, **headers: str) -> dict[str, Any]:
    body = {"chatAppId": "support", "agentId": "helper", "message": QUESTION, "features": FEATURES, "source": "user"}
    response = httpx.post(f"{server.url}/api/chat/converse", json=body, headers={**ALICE, **headers}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def turn_trace(receiver: OtlpReceiver) -> list[Span]:
    """The spans of the one turn's trace, once its root arrived with every child (batches come in any order)."""

    def complete(spans: list[Span]) -> bool:
        roots = [span for span in spans if span.name == "chat.turn"]
        return len(roots) == 1 and sum(span.trace_id == roots[0].trace_id for span in spans) >= 12

    spans = receiver.wait_for(complete)
    (root,) = (span for span in spans if span.name == "chat.turn")
    return [span for span in spans if span.trace_id == root.trace_id]


def by_name(spans: list[Span]) -> dict[str, Span]:
    return {span.name: span for span in spans}


def test_a_turn_is_one_trace_of_its_stages_with_genai_attributes_and_no_content(platform, openai_server, receiver):
    script(openai_server)
    with asgi_server(platform) as server:
        done = converse(server)
        spans = turn_trace(receiver)

    assert done["response"] == ANSWER
    named = by_name(spans)
    root = named["chat.turn"]
    assert root.parent_span_id == "" and root.service_name == "chat-under-test"
    assert root.attributes == {
        "chat.app_id": "support",
        "chat.agent_id": "helper",
        "chat.session_id": done["sessionId"],
        "chat.message_id": done["messageId"],
    }
    main = [span for span in spans if span.name == "chat test-model"]
    assert len(main) == 2, "two model calls of the tool loop"
    # The mcp library traces its own requests (`MCP send tools/call add`), under the tool call's span.
    mcp = {span.name: _parent(spans, span) for span in spans if span.name.startswith("MCP ")}
    assert mcp["MCP send tools/call add"] == "execute_tool add" and set(mcp.values()) == {"execute_tool add"}
    parent_of = {span.name: _parent(spans, span) for span in spans if span.name != "chat test-model" and span.name not in mcp}
    assert parent_of == {
        "chat.turn": "",
        "directives.select": "chat.turn",
        "chat selection-model": "directives.select",
        "execute_tool add": "chat.turn",
        "execute_tool search_handbook": "chat.turn",
        "knowledge.search handbook": "execute_tool search_handbook",
        "execute_tool writer": "chat.turn",
        "invoke_agent writer": "execute_tool writer",
        "chat writer-model": "invoke_agent writer",
        "verify": "chat.turn",
        "chat grader-model": "verify",
    }
    assert all(_parent(spans, span) == "chat.turn" for span in main)

    first, second = sorted(main, key=lambda span: span.attributes["gen_ai.response.finish_reasons"] != ["tool_call"])
    assert first.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "test-model",
        "gen_ai.usage.input_tokens": first.attributes["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": first.attributes["gen_ai.usage.output_tokens"],
        "gen_ai.response.finish_reasons": ["tool_call"],
    }
    assert first.attributes["gen_ai.usage.input_tokens"] > 0 and second.attributes["gen_ai.usage.output_tokens"] > 0
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    add = named["execute_tool add"].attributes
    assert add["gen_ai.tool.name"] == "add" and add["gen_ai.tool.call.id"] == "call_add"
    assert named["invoke_agent writer"].attributes["gen_ai.agent.id"] == "writer"
    everything = json.dumps([span.attributes for span in spans])
    assert "Saturday" not in everything and "dock seven" not in everything and "Be brief" not in everything


def _parent(spans: list[Span], span: Span) -> str:
    return next((other.name for other in spans if other.span_id == span.parent_span_id), "")


def test_with_the_content_variable_the_prompts_and_answers_are_on_the_spans(platform, openai_server, receiver):
    script(openai_server)
    with asgi_server({**platform, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}) as server:
        converse(server)
        spans = turn_trace(receiver)

    final = next(s for s in spans if s.name == "chat test-model" and s.attributes["gen_ai.response.finish_reasons"] == ["stop"])
    asked = json.loads(final.attributes["gen_ai.input.messages"])
    assert asked[0] == {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    results = [part for message in asked if message["role"] == "tool" for part in message["parts"]]
    assert {"type": "tool_call_response", "id": "call_add", "response": '{"result":5.0}'} in results
    assert "Be brief." in json.loads(final.attributes["gen_ai.system_instructions"])[0]["content"]
    answered = json.loads(final.attributes["gen_ai.output.messages"])
    assert answered == [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"}]
    lookup = next(s for s in spans if s.name == "knowledge.search handbook")
    assert lookup.attributes["chat.knowledge_base.query"] == "Saturday deliveries"


def test_an_incoming_traceparent_parents_the_turn_and_the_model_and_mcp_servers_see_the_trace(platform, openai_server, receiver, mcp_peer):
    script(openai_server)
    with asgi_server(platform) as server:
        converse(server, traceparent=f"00-{CALLER_TRACE}-{CALLER_SPAN}-01")
        spans = turn_trace(receiver)

    root = next(span for span in spans if span.name == "chat.turn")
    assert root.trace_id == CALLER_TRACE and root.parent_span_id == CALLER_SPAN
    model_calls = {span.span_id for span in spans if span.name.startswith("chat ") and span.name != "chat.turn"}
    sent = [headers["traceparent"].split("-") for headers in openai_server.headers]
    assert len(sent) == 5 and {trace_id for _, trace_id, _, _ in sent} == {CALLER_TRACE}
    assert {span_id for _, _, span_id, _ in sent} == model_calls, "each model request is the child of its own span"
    (call,) = mcp_peer.calls
    mcp_request = next(span for span in spans if span.name == "MCP send tools/call add")
    assert call.traceparent.split("-")[1:3] == [CALLER_TRACE, mcp_request.span_id]


def test_a_websocket_handshakes_traceparent_parents_the_turns_it_carries(platform, openai_server, receiver):
    script(openai_server)
    body = {"chatAppId": "support", "agentId": "helper", "message": QUESTION, "features": FEATURES, "source": "user"}
    with asgi_server(platform) as server:
        url = f"ws://127.0.0.1:{server.port}/ws/chat/converse?token={bearer_token('alice')}"
        with connect(url, additional_headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}, open_timeout=30) as socket:
            socket.send(json.dumps(body))
            while (frame := json.loads(socket.recv(timeout=30)))["type"] not in {"done", "error"}:
                pass
        spans = turn_trace(receiver)

    assert frame["type"] == "done", frame
    root = next(span for span in spans if span.name == "chat.turn")
    assert root.trace_id == CALLER_TRACE and root.parent_span_id == CALLER_SPAN
    assert root.attributes["chat.message_id"] == frame["messageId"]


def test_without_an_exporter_nothing_is_traced_and_no_traceparent_goes_out(platform, openai_server, receiver, mcp_peer):
    script(openai_server)
    untraced = {name: value for name, value in platform.items() if not name.startswith("OTEL_")}
    with asgi_server(untraced) as server:
        done = converse(server, traceparent=f"00-{CALLER_TRACE}-{CALLER_SPAN}-01")

    assert done["response"] == ANSWER
    assert len(openai_server.headers) == 5 and not any("traceparent" in headers for headers in openai_server.headers)
    assert mcp_peer.calls[0].traceparent == ""
    assert receiver.spans == []


def test_a_webhook_carries_the_trace_of_the_request_that_caused_it(platform, openai_server, receiver, settings):
    script(openai_server)
    with WebhookReceiver() as hooks:
        settings.CHAT_WEBHOOKS = [{"url": hooks.url, "secret": "receiver-secret-0123456789", "events": ["session.created"]}]
        with asgi_server({**platform, "CHAT_WEBHOOKS": json.dumps(settings.CHAT_WEBHOOKS)}) as server:
            converse(server, traceparent=f"00-{CALLER_TRACE}-{CALLER_SPAN}-01")
        call_command("run_worker", "--burst", stdout=StringIO())  # the worker delivers, long after the turn
        (delivery,) = hooks.received

    # session.created is written when the turn is admitted, before its own span: the caller's trace.
    assert delivery.event == "session.created"
    assert delivery.headers["traceparent"] == f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


def test_an_anthropic_model_request_carries_the_trace_of_its_model_call(platform, openai_server, receiver):
    AgentDefinition.objects.filter(pk="helper").update(foundation_model="anthropic:claude-test", collaborators=None, tool_ids=[])
    openai_server.script([Reply(text='<answer>["be-brief"]</answer>'), Reply(text=ANSWER), Reply(text="<grade>A</grade>")])
    anthropic = {"ANTHROPIC_BASE_URL": openai_server.base_url.removesuffix("/v1"), "ANTHROPIC_API_KEY": "k"}
    with asgi_server({**platform, **anthropic}) as server:
        assert converse(server)["response"] == ANSWER
        spans = receiver.wait_for(lambda spans: any(span.name == "chat.turn" for span in spans))

    call = next(span for span in spans if span.name == "chat claude-test")
    assert call.attributes["gen_ai.provider.name"] == "anthropic"
    # The anthropic library traces (and propagates) its own request, as a child of the model call's span.
    sent = next(span for span in spans if span.span_id == openai_server.headers[1]["traceparent"].split("-")[2])
    assert sent.trace_id == call.trace_id and sent.parent_span_id == call.span_id


def test_a_failed_turn_is_an_error_span_saying_what_its_user_was_told(platform, openai_server, receiver):
    AgentDefinition.objects.filter(pk="helper").update(collaborators=None, tool_ids=[], knowledge_bases=None)
    openai_server.script([Reply(text='<answer>["be-brief"]</answer>'), Reply(status=400)])
    body = {"chatAppId": "support", "agentId": "helper", "message": QUESTION, "features": FEATURES, "source": "user"}
    with asgi_server(platform) as server:
        response = httpx.post(f"{server.url}/api/chat/converse", json=body, headers=ALICE, timeout=30)
        spans = receiver.wait_for(lambda spans: any(span.name == "chat.turn" for span in spans))

    assert response.status_code == 502, response.text
    named = by_name(spans)
    assert named["chat.turn"].status_code == named["chat test-model"].status_code == 2  # ERROR
    assert named["chat test-model"].attributes["error.type"] == "ModelError"
    assert named["chat.turn"].status_message == response.json()["error"]


def test_a_turn_through_the_chat_completions_door_is_traced_the_same(platform, openai_server, receiver):
    script(openai_server)
    with asgi_server(platform) as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=bearer_token("alice"), max_retries=0)
        completion = client.chat.completions.create(
            model="support",
            messages=[{"role": "user", "content": QUESTION}],
            extra_headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
        )
        spans = turn_trace(receiver)

    assert completion.choices[0].message.content == ANSWER
    root = by_name(spans)["chat.turn"]
    assert root.parent_span_id == CALLER_SPAN and root.attributes["chat.app_id"] == "support"
    assert {"directives.select", "execute_tool add", "invoke_agent writer", "verify"} <= set(by_name(spans))
