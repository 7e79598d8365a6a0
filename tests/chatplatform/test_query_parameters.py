"""Numbers in query parameters and bodies: a character Python calls a digit that is not one (`²`), a
40-digit number, digits of another script are a 400 naming the parameter, never a 500 (docs/api.md,
"Envelope", "Pagination"). The same for the operators' pages that take a number."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from chat.turn import wait_for_running_turns
from tests.asgi_client import AsgiClient
from tests.conftest import assert_error, bearer_token
from tests.converse.helpers import parse_sse
from tests.factories import AgentFactory, ChatAppFactory, ChatSessionFactory
from tests.knowledge.conftest import create_base

pytestmark = pytest.mark.django_db

NOT_WHOLE_NUMBERS = ["²", "9" * 40, "٣", "1e3", "-1", " "]


@pytest.mark.parametrize("value", NOT_WHOLE_NUMBERS)
def test_list_endpoints_answer_400_naming_the_parameter(user_client, admin_client, value):
    assert user_client.get("/api/chat/user").status_code == 200  # alice, on first sight
    session = ChatSessionFactory(user_id="alice")
    assert_error(user_client.get("/api/chat/sessions", {"limit": value}), 400, "INVALID_REQUEST", mentions="limit")
    assert_error(user_client.get(f"/api/chat/sessions/{session.pk}/messages", {"limit": value}), 400, mentions="limit")
    assert_error(admin_client.get(f"/api/chat-admin/sessions/{session.pk}/messages", {"limit": value}), 400, mentions="limit")
    search = {"command": "sessionSearch", "size": value}
    assert_error(admin_client.post("/api/chat-admin/sessions/search", search, format="json"), 400, mentions="size")
    inside = {"command": "sessionSearch", "search": {"size": value}}
    assert_error(admin_client.post("/api/chat-admin/sessions/search", inside, format="json"), 400, mentions="size")
    assert_error(admin_client.post("/api/chat-admin/users/search", {"limit": value}, format="json"), 400, mentions="limit")
    assert_error(admin_client.post("/api/chat-admin/semantic-directive/search", {"limit": value}, format="json"), 400, mentions="limit")


@pytest.mark.django_db(transaction=True)
async def test_a_resume_with_a_garbled_event_number_replays_the_turn_from_its_start():
    await sync_to_async(ChatAppFactory)(chat_app_id="support", agent__agent_id="helper", agent__foundation_model="offline")
    alice = AsgiClient(AUTHORIZATION=f"Bearer {bearer_token('alice')}")
    turn = {"chatAppId": "support", "agentId": "helper", "message": "Hello", "features": {}, "source": "user"}
    done = (await alice.post("/api/chat/converse", turn)).json()
    await wait_for_running_turns()
    for number in ("²", "9" * 5000):
        path = f"/api/chat/sessions/{done['sessionId']}/stream"
        replay = await alice.request("GET", path, headers={"last-event-id": f"{done['messageId']}:{number}"})
        events = parse_sse(await replay.read())
        assert replay.status_code == 200 and events[0][0] == "session" and "done" in dict(events), events


@pytest.mark.parametrize("value", ["²", "9" * 40, "9" * 5000])
def test_operator_pages_taking_a_number_ignore_or_refuse_one_that_is_not(staff, admin_client, value):
    assert staff.get("/admin/chat/webhookdelivery/", {"endpoint": value}).status_code == 200
    create_base(admin_client)
    assert staff.get("/admin/knowledge/knowledgebase/handbook/change/", {"q": "hello", "top_k": value}).status_code == 200
    agent = AgentFactory()
    rollback = staff.post(f"/admin/agents/agentdefinition/{agent.pk}/rollback/", {"version": value}, follow=True)
    assert rollback.status_code == 200 and "choose a version to roll back to" in rollback.content.decode()
