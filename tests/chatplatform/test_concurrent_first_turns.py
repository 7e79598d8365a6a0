"""The first turns of a freshly started server process, all at once: each sends the system prompt
rendered for its own user, and each agent access rule decides for its own user."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from tests.conftest import bearer_token
from tests.factories import AgentFactory, ChatAppFactory
from tests.peers import Reply
from tests.servers import asgi_server, database_url_of_test_db

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

USERS = 50
PROMPT = "You are the {{company.name}} assistant of {{user.firstName}} {{user.lastName}} ({{user.userId}}, plan {{customData.plan}})."


def _plan(number: int) -> str:
    return "gold" if number % 2 == 0 else "free"


@pytest.fixture
def concierge(transactional_db):
    """An agent with a templated prompt and an access rule on the user's custom data, and its chat app."""
    agent = AgentFactory(
        agent_id="concierge",
        base_prompt=PROMPT,
        foundation_model="openai:gpt-test",
        access_rules=[
            {"order": 1, "effect": "allow", "condition": 'customData.plan == "gold" && user.userId.startsWith("user-")'},
            {"order": 2, "effect": "deny"},
        ],
    )
    ChatAppFactory(chat_app_id="front", agent=agent)


async def _first_turns(url: str) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=USERS)) as client:

        async def turn(number: int) -> httpx.Response:
            token = bearer_token(
                f"user-{number}", given_name=f"First{number}", family_name=f"Last{number}", custom_data={"plan": _plan(number)}
            )
            body = {"chatAppId": "front", "agentId": "concierge", "message": f"hello from {number}", "features": {}, "source": "user"}
            return await client.post("/api/chat/converse", json=body, headers={"Authorization": f"Bearer {token}"})

        return await asyncio.gather(*(turn(number) for number in range(USERS)))


# Warmed, as a server starts by default; or not, so that the prompt compiler's first import happens
# under the fifty turns too.
@pytest.mark.parametrize("warm_start", ["true", "false"])
def test_fifty_first_turns_at_once_each_send_their_own_users_prompt_and_access_decision(concierge, openai_server, warm_start):
    openai_server.script(lambda request: Reply(text="Hi."))
    env = {"DATABASE_URL": database_url_of_test_db(), "OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "k"}
    # A new process on the test's database (several database threads on PostgreSQL): no prompt is
    # compiled or cached yet when the fifty turns arrive together.
    with asgi_server({**env, "CHAT_COMPANY_NAME": "ACME", "LOG_LEVEL": "WARNING", "CHAT_WARM_START": warm_start}) as server:
        responses = asyncio.run(_first_turns(server.url))

    for number, response in enumerate(responses):
        expected = 200 if _plan(number) == "gold" else 403
        assert response.status_code == expected, (number, response.text)
    prompts = {}
    for request in openai_server.requests:
        user_message = request["messages"][-1]["content"]
        prompts[int(re.search(r"hello from (\d+)", user_message).group(1))] = request["messages"][0]["content"]
    assert sorted(prompts) == [number for number in range(USERS) if _plan(number) == "gold"]
    for number, prompt in prompts.items():
        assert prompt == f"You are the ACME assistant of First{number} Last{number} (user-{number}, plan gold).", number
