"""Usage limits (docs/api.md, "Usage limits"): a user's turns counted per UTC day and calendar
month, site-wide and per chat app; once a limit is reached the next turn is refused with 429
USAGE_LIMIT_EXCEEDED before any model is called."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agents.models import AgentDefinition
from chat.models import ChatApp, ChatMessage, UsageCounter
from chat.turn import wait_for_running_turns
from chatplatform.asgi import application
from tests.conftest import assert_error, bearer_token
from tests.converse.helpers import converse
from tests.factories import ChatAppFactory, ToolDefinitionFactory
from tests.peers import Reply, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "openai:test-model"
TURN_TOKENS = 15  # the scripted model's reply: 10 prompt and 5 completion tokens
PRICES = {"default": {"input": 1.0, "output": 1.0}}  # USD per 1,000 tokens: a turn costs $0.015


def limited(**per_user):
    return {"usageLimits": {"enabled": True, "perUser": per_user}}


@pytest.fixture(autouse=True)
def _site(settings, openai_server, transactional_db):
    settings.CHAT_SITE_FEATURES = {}
    settings.CHAT_TITLE_MODEL = "offline"
    settings.CHAT_MODEL_PRICES = PRICES
    openai_server.script(lambda request: Reply(text="Fine, thanks."))
    for chat_app_id, features in (("support", limited(daily={"tokens": 2 * TURN_TOKENS})), ("other", {})):
        ChatAppFactory(chat_app_id=chat_app_id, agent__agent_id=f"{chat_app_id}-agent", agent__foundation_model=MODEL, features=features)


async def turn(client, chat_app_id: str = "support"):
    return await converse(client, chatAppId=chat_app_id, agentId=f"{chat_app_id}-agent")


def next_midnight() -> datetime:
    return datetime.combine(datetime.now(UTC).date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)


async def test_the_turn_after_the_one_that_reached_a_chat_apps_limit_is_refused_before_the_model_is_asked(async_client_for, openai_server):
    alice = async_client_for("alice")
    for _ in range(2):
        assert (await turn(alice)).status_code == 200
    assert len(openai_server.requests) == 2

    refused = await turn(alice)

    body = assert_error(refused, 429, "USAGE_LIMIT_EXCEEDED")
    assert await ChatMessage.objects.acount() == 4  # nothing of the refused turn is stored
    reset = next_midnight()
    assert "daily limit of 30 tokens in chat app support" in body["error"], body
    assert reset.strftime("%Y-%m-%dT%H:%M:%SZ") in body["error"], body
    seconds_left = (reset - datetime.now(UTC)).total_seconds()
    assert abs(int(refused["Retry-After"]) - seconds_left) < 5
    assert len(openai_server.requests) == 2  # the model never saw the refused turn
    # The limit is the chat app's: another chat app still answers, and another user too.
    assert (await turn(alice, "other")).status_code == 200
    assert (await turn(async_client_for("bob"))).status_code == 200


async def test_a_site_wide_cost_limit_counts_every_chat_app_together(async_client_for, openai_server, settings):
    settings.CHAT_SITE_FEATURES = limited(monthly={"costUsd": 0.02})
    alice = async_client_for("alice")
    assert (await turn(alice, "other")).status_code == 200  # $0.015
    assert (await turn(alice, "support")).status_code == 200  # $0.03: this one may finish past the limit

    body = assert_error(await turn(alice, "other"), 429, "USAGE_LIMIT_EXCEEDED")

    assert "monthly limit of $0.02 across all chat apps" in body["error"], body
    first_of_next_month = (datetime.now(UTC).date().replace(day=28) + timedelta(days=4)).replace(day=1)
    assert f"resets at {first_of_next_month.isoformat()}T00:00:00Z" in body["error"], body
    assert len(openai_server.requests) == 2


async def test_usage_lists_what_the_users_turns_used_with_the_limits_and_their_reset(async_client_for, settings):
    settings.CHAT_SITE_FEATURES = limited(monthly={"costUsd": 5})
    alice = async_client_for("alice")
    await turn(alice, "support")
    await turn(alice, "other")

    in_support = (await alice.request("GET", "/api/chat/user/usage?chatAppId=support")).json()
    everywhere = (await alice.request("GET", "/api/chat/user/usage")).json()

    assert in_support["success"] is True
    assert in_support["usage"]["daily"] == {
        "tokens": TURN_TOKENS,
        "costUsd": 0.015,
        "limits": [{"scope": "chatApp", "chatAppId": "support", "tokens": 30}],
        "resetsAt": next_midnight().strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert in_support["usage"]["monthly"]["limits"] == [{"scope": "site", "costUsd": 5}]
    assert everywhere["usage"]["daily"]["tokens"] == everywhere["usage"]["monthly"]["tokens"] == 2 * TURN_TOKENS
    assert everywhere["usage"]["monthly"]["costUsd"] == pytest.approx(0.03)
    assert await UsageCounter.objects.filter(user_id="alice").acount() == 6  # day and month: support, other, site
    assert_error(await alice.request("GET", "/api/chat/user/usage?chatAppId=nowhere"), 404, "INVALID_CHAT_APP_ID")
    assert_error(await alice.request("GET", "/api/chat/user/usage?userId=bob"), 403, "INSUFFICIENT_PERMISSIONS")


def test_a_usage_limit_that_breaks_a_rule_is_refused_naming_it(admin_client):
    for limits, path, rule in (
        ({"daily": {"tokens": -1}}, "usageLimits.perUser.daily.tokens", "must be a whole number of at least 0"),
        ({"daily": {"tokens": 1.5}}, "usageLimits.perUser.daily.tokens", "must be a whole number of at least 0"),
        ({"weekly": {"tokens": 5}}, "usageLimits.perUser.weekly", "is not a period"),
        ({"monthly": {"dollars": 5}}, "usageLimits.perUser.monthly.dollars", "is not a measure"),
    ):
        chat_app = {"chatAppId": "support", "features": {"usageLimits": {"enabled": True, "perUser": limits}}}
        response = admin_client.post("/api/chat-admin/chat-app", {"chatApp": chat_app}, format="json")
        body = assert_error(response, 400, "INVALID_REQUEST")
        assert path in body["error"] and rule in body["error"], body


async def test_the_websocket_refuses_a_turn_past_the_limit_with_an_error_frame_and_stays_open(async_client_for, openai_server):
    alice = async_client_for("alice")
    for _ in range(2):
        await turn(alice)
    socket = WebsocketCommunicator(application, f"/ws/chat/converse?token={bearer_token('alice')}")
    assert (await socket.connect())[0]

    await socket.send_json_to({"chatAppId": "support", "agentId": "support-agent", "message": "Again", "features": {}, "source": "user"})
    refused = await socket.receive_json_from(timeout=10)
    await socket.send_json_to({"chatAppId": "other", "agentId": "other-agent", "message": "Elsewhere", "features": {}, "source": "user"})
    frames = [await socket.receive_json_from(timeout=10) for _ in range(2)]

    assert refused["type"] == "error" and refused["code"] == "USAGE_LIMIT_EXCEEDED" and "daily limit" in refused["error"]
    assert frames[0]["type"] == "session"  # the other chat app still answers on the same socket
    await socket.disconnect()
    await wait_for_running_turns()


async def test_a_turn_going_on_after_its_approval_is_not_refused_and_its_usage_counts(async_client_for, openai_server):
    await sync_to_async(_support_with_a_tool_that_waits)(limit=TURN_TOKENS)
    openai_server.script([Reply(text="Let me add that.", tool_calls=[ToolCall("add", {"a": 2, "b": 3})]), Reply(text="It is 5.")])
    alice = async_client_for("alice")
    done = (await converse(alice, chatAppId="support", agentId="support-agent")).json()
    assert done["status"] == "awaiting_approval"  # its 15 tokens counted: the limit is reached
    assert_error(await turn(alice), 429, "USAGE_LIMIT_EXCEEDED")
    approval_id = done["pendingApprovals"][0]

    decided = await alice.post(f"/api/chat/sessions/{done['sessionId']}/approvals/{approval_id}", {"decision": "approve"})
    await wait_for_running_turns()

    assert decided.status_code == 200
    answer = await ChatMessage.objects.aget(pk=done["messageId"])
    assert answer.message == "Let me add that.\n\nIt is 5." and answer.error is None
    today = await UsageCounter.objects.aget(user_id="alice", chat_app_id="support", period="day")
    assert today.tokens == 2 * TURN_TOKENS  # the pause's call and the one after it, each once


def _support_with_a_tool_that_waits(limit: int) -> None:
    tool = ToolDefinitionFactory(tool_id="adder@1", approval={"required": True})
    AgentDefinition.objects.filter(pk="support-agent").update(tool_ids=[tool.tool_id])
    ChatApp.objects.filter(pk="support").update(features=limited(daily={"tokens": limit}))
