"""Tool calls that wait for a person (docs/api.md, "Approvals"): the turn stores its answer so far
and ends its stream waiting; a decision lets it go on (streamed in the decision's answer); an
expired or superseded approval is denied; a CEL condition over the call's arguments decides
which calls wait. On the embedded default: one process."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.models import AgentDefinition
from chat.models import ChatMessage, ToolApproval
from chat.turn import wait_for_running_turns
from tests.asgi_client import AsgiClient
from tests.conftest import assert_error
from tests.converse.helpers import body, parse_sse
from tests.factories import ToolDefinitionFactory
from tests.peers import Reply, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def refund_tool(app: Any, approval: dict[str, Any]) -> Any:
    """The agent of `app` gets a tool `add` that waits for a person as `approval` says."""
    tool = ToolDefinitionFactory(tool_id="refunds@1", approval=approval)
    AgentDefinition.objects.filter(pk="helper").update(tool_ids=[tool.tool_id])
    return tool


async def streamed(client: AsgiClient, path: str, data: Any) -> list[tuple[str, dict[str, Any]]]:
    response = await client.post(path, data, headers={"Accept": "text/event-stream"})
    assert response.status_code == 200, await response.read()
    events = parse_sse(await response.read())
    await wait_for_running_turns()
    return events


async def test_a_call_that_needs_approval_waits_then_runs_when_approved(app, async_client_for, openai_server):
    await refund_tool(app, {"required": True, "timeoutSeconds": 3600})
    openai_server.script([Reply(text="Let me add that.", tool_calls=[ToolCall("add", {"a": 2, "b": 3})]), Reply(text="It is 5.")])
    alice = async_client_for("alice")

    events = await streamed(alice, "/api/chat/converse", body())
    kinds = [kind for kind, _ in events]
    assert kinds[-2:] == ["approval", "done"]
    approval, done = events[-2][1], events[-1][1]
    assert approval["function"] == "add" and approval["arguments"] == {"a": 2, "b": 3} and approval["toolId"] == "refunds@1"
    assert done["status"] == "awaiting_approval" and done["pendingApprovals"] == [approval["approvalId"]]
    assert len(openai_server.requests) == 1, "the tool did not run and the model was not asked again"
    stored = await ChatMessage.objects.aget(pk=done["messageId"])
    assert stored.message == "Let me add that."

    session_id = done["sessionId"]
    listed = (await alice.request("GET", f"/api/chat/sessions/{session_id}/approvals")).json()["approvals"]
    assert [(a["approvalId"], a["status"]) for a in listed] == [(approval["approvalId"], "pending")]

    going_on = await streamed(alice, f"/api/chat/sessions/{session_id}/approvals/{approval['approvalId']}", {"decision": "approve"})
    assert going_on[0][0] == "session" and going_on[0][1]["messageId"] == done["messageId"]
    final = dict(going_on)["done"]
    assert final["response"] == "Let me add that.\n\nIt is 5." and "status" not in final
    assert json.loads(openai_server.tool_results(1)[0][1]) == {"sum": 5}
    stored = await ChatMessage.objects.aget(pk=done["messageId"])
    assert stored.message == final["response"]
    assert stored.usage["inputTokens"] == 20, "both model calls count on the one answer"
    decided = await ToolApproval.objects.aget(pk=approval["approvalId"])
    assert decided.status == "approved" and decided.decided_by == "alice"
    again = await alice.post(f"/api/chat/sessions/{session_id}/approvals/{approval['approvalId']}", {"decision": "deny"})
    assert_error(again, 409, "ALREADY_DECIDED")


async def test_a_denied_call_reaches_the_model_as_its_refusal_with_the_reason(app, async_client_for, openai_server):
    await refund_tool(app, {"required": True})
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 1})]), Reply(text="Understood, I will not.")])
    alice = async_client_for("alice")
    done = dict(await streamed(alice, "/api/chat/converse", body()))["done"]
    approval_id = done["pendingApprovals"][0]

    answer = await alice.post(f"/api/chat/sessions/{done['sessionId']}/approvals/{approval_id}", {"decision": "deny", "reason": "too much"})
    assert answer.status_code == 200 and answer.json()["approval"]["status"] == "denied"
    await wait_for_running_turns()
    ((_, result),) = openai_server.tool_results(1)
    assert "refused" in result and "too much" in result
    stored = await ChatMessage.objects.aget(pk=done["messageId"])
    assert stored.message == "Understood, I will not."


async def test_a_condition_on_the_arguments_decides_which_calls_wait(app, async_client_for, openai_server):
    await refund_tool(app, {"required": "args.a > 100"})
    openai_server.script(
        [Reply(tool_calls=[ToolCall("add", {"a": 5, "b": 1})]), Reply(text="6."), Reply(tool_calls=[ToolCall("add", {"a": 500, "b": 1})])]
    )
    alice = async_client_for("alice")
    small = dict(await streamed(alice, "/api/chat/converse", body()))["done"]
    assert small["response"] == "6." and "status" not in small
    large = dict(await streamed(alice, "/api/chat/converse", body(sessionId=small["sessionId"])))["done"]
    assert large["status"] == "awaiting_approval"


async def test_only_the_sessions_user_an_admin_or_an_approver_may_decide(app, async_client_for, openai_server):
    await refund_tool(app, {"required": True, "approverRoles": ["refunds-desk"]})
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 2})]), Reply(text="3.")])
    done = dict(await streamed(async_client_for("alice"), "/api/chat/converse", body()))["done"]
    path = f"/api/chat/sessions/{done['sessionId']}/approvals"
    approval_id = done["pendingApprovals"][0]

    bob = async_client_for("bob")
    assert_error(await bob.request("GET", path), 404, "INVALID_SESSION_ID")
    assert_error(await bob.post(f"{path}/{approval_id}", {"decision": "approve"}), 404, "NOT_FOUND")
    desk = async_client_for("carol", roles=["refunds-desk"])
    assert [a["approvalId"] for a in (await desk.request("GET", path)).json()["approvals"]] == [approval_id]
    assert (await desk.post(f"{path}/{approval_id}", {"decision": "approve"})).status_code == 200
    await wait_for_running_turns()
    assert (await ToolApproval.objects.aget(pk=approval_id)).decided_by == "carol"


async def test_a_new_message_supersedes_the_pending_approvals_first(app, async_client_for, openai_server):
    await refund_tool(app, {"required": True})
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 2})]), Reply(text="Not added."), Reply(text="Hello again.")])
    alice = async_client_for("alice")
    done = dict(await streamed(alice, "/api/chat/converse", body()))["done"]

    second = await alice.post("/api/chat/converse", body(sessionId=done["sessionId"], message="Never mind"))
    await wait_for_running_turns()
    assert second.json()["response"] == "Hello again."
    approval = await ToolApproval.objects.aget(pk=done["pendingApprovals"][0])
    assert (approval.status, approval.reason) == ("denied", "superseded")
    texts = [m.message async for m in ChatMessage.objects.filter(session_id=done["sessionId"]).order_by("timestamp")]
    assert texts == ["Hello there", "Not added.", "Never mind", "Hello again."]
    assert "superseded" in openai_server.tool_results(1)[0][1]


async def test_an_approval_nobody_decides_in_time_is_denied_by_the_worker_and_the_turn_goes_on(app, async_client_for, openai_server):
    from chat.tasks import expire_approvals  # the periodic job the worker runs every minute

    await refund_tool(app, {"required": True, "timeoutSeconds": 60})
    openai_server.script([Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 2})]), Reply(text="Nobody answered, so I did not add.")])
    done = dict(await streamed(async_client_for("alice"), "/api/chat/converse", body()))["done"]
    await ToolApproval.objects.filter(pk=done["pendingApprovals"][0]).aupdate(expires_at=timezone.now() - timedelta(seconds=1))

    assert await sync_to_async(expire_approvals.func, thread_sensitive=False)() == {"turns": 1}
    approval = await ToolApproval.objects.aget(pk=done["pendingApprovals"][0])
    assert (approval.status, approval.reason) == ("denied", "expired")
    stored = await ChatMessage.objects.aget(pk=done["messageId"])
    assert stored.message == "Nobody answered, so I did not add."


def test_an_approval_rule_that_does_not_compile_is_refused_at_write(admin_client):
    definition = {
        "toolId": "refunds@1",
        "executionType": "inline",
        "name": "refunds",
        "displayName": "Refunds",
        "description": "Refunds an order.",
        "supportedAgentFrameworks": ["hosted"],
        "functionSchema": [],
        "code": "(event, params) => 1",
        "approval": {"required": "args.amount >"},
    }
    response = admin_client.post("/api/chat-admin/tool", {"tool": definition, "userId": "ops"}, format="json")
    assert_error(response, 400, "INVALID_REQUEST", mentions="approval.required")
