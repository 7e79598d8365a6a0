"""Collaborating agents in turns (docs/api.md, "Collaborating agents"): SUPERVISOR offers each collaborator as a function that
runs the collaborator's own turn; SUPERVISOR_ROUTER lets the chosen collaborator answer the user
itself; DISABLED offers none. History is relayed per `historyRelay`; usage adds up; a failing
collaborator is a tool error, never a failed turn."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentDefinition
from tests.converse.conftest import MODEL
from tests.converse.helpers import converse, converse_sse
from tests.factories import AgentFactory
from tests.peers import Reply, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

SUPERVISOR_PROMPT = "You are the helper."
RESEARCHER_PROMPT = "You are the researcher."
WRITER_PROMPT = "You are the writer."


def _team(mode: Any = "SUPERVISOR", *, researcher_relay: str = "TO_COLLABORATOR", researcher_rules: Any = None) -> None:
    AgentFactory(agent_id="researcher", base_prompt=RESEARCHER_PROMPT, foundation_model=MODEL, access_rules=researcher_rules)
    AgentFactory(agent_id="writer", base_prompt=WRITER_PROMPT, foundation_model=MODEL)
    AgentDefinition.objects.filter(pk="helper").update(
        base_prompt=SUPERVISOR_PROMPT,
        agent_collaboration=mode,
        collaborators=[
            {"agentId": "researcher", "instruction": "Finds facts.", "historyRelay": researcher_relay},
            {"agentId": "writer", "instruction": "Writes the final text.", "historyRelay": "TO_AGENT"},
        ],
    )


def _system(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"] if request["messages"][0]["role"] == "system" else ""


def by_agent(**replies: Any) -> Any:
    """A script answering each request by whose system prompt it carries: supervisor, researcher, writer, router."""
    counts: dict[str, int] = {}

    def reply(request: dict[str, Any]) -> Reply:
        system = _system(request)
        who = next(
            (
                name
                for name, marker in (("router", "You route"), ("researcher", RESEARCHER_PROMPT), ("writer", WRITER_PROMPT))
                if marker in system
            ),
            "supervisor",
        )
        answers = replies[who]
        counts[who] = counts.get(who, 0) + 1
        return answers[min(counts[who], len(answers)) - 1] if isinstance(answers, list) else answers

    return reply


def _requests_of(server: Any, marker: str) -> list[dict[str, Any]]:
    return [request for request in server.requests if marker in _system(request)]


async def test_a_supervisor_calls_a_collaborator_whose_own_turn_answers_the_function(app, async_client_for, openai_server, settings):
    settings.CHAT_SITE_FEATURES = {"traces": {"enabled": True}}
    await sync_to_async(_team)()
    openai_server.script(
        by_agent(
            supervisor=[
                Reply(
                    tool_calls=[ToolCall("researcher", {"request": "When do docks open?"}, id="call_r")],
                    prompt_tokens=10,
                    completion_tokens=2,
                ),
                Reply(text="Docks open at six.", prompt_tokens=30, completion_tokens=5),
            ],
            researcher=Reply(text="They open at 6 am.", prompt_tokens=7, completion_tokens=4),
        )
    )

    _, events = await converse_sse(async_client_for("alice"), message="When do the docks open?")

    names = {tool["name"]: tool for tool in openai_server.offered_tools(0)}
    assert set(names) == {"researcher", "writer"}
    assert names["researcher"]["description"] == "Finds facts." and names["researcher"]["parameters"]["required"] == ["request"]
    (nested,) = _requests_of(openai_server, RESEARCHER_PROMPT)
    assert nested["messages"][-1] == {"role": "user", "content": "When do docks open?"}
    assert [call for call in openai_server.tool_results(len(openai_server.requests) - 1)] == [("call_r", "They open at 6 am.")]
    done = dict(events)["done"]
    assert done["response"] == "Docks open at six."
    assert done["usage"]["inputTokens"] == 10 + 7 + 30 and done["usage"]["outputTokens"] == 2 + 4 + 5
    invocation = next(data for name, data in events if name == "trace" and "agentCollaboratorInvocationOutput" in data)
    output = invocation["agentCollaboratorInvocationOutput"]
    assert (output["agentId"], output["request"], output["response"]) == ("researcher", "When do docks open?", "They open at 6 am.")
    assert output["usage"]["inputTokens"] == 7 and output["traces"][-1]["stage"] == "model"
    assert "They open" not in "".join(data["text"] for name, data in events if name == "delta"), "a collaborator's answer is not streamed"


@pytest.mark.parametrize(("relay", "sees_history"), [("TO_COLLABORATOR", True), ("TO_AGENT", False)])
async def test_history_reaches_a_collaborator_only_when_relayed(app, async_client_for, openai_server, relay, sees_history):
    await sync_to_async(_team)(researcher_relay=relay)
    client = async_client_for("alice")
    openai_server.script([Reply(text="Noted: your dock is seven.")])
    session_id = (await converse(client, message="My dock is seven.")).json()["sessionId"]
    openai_server.script(
        by_agent(
            supervisor=[Reply(tool_calls=[ToolCall("researcher", {"request": "Which dock?"})]), Reply(text="Dock seven.")],
            researcher=Reply(text="Seven."),
        )
    )

    await converse(client, sessionId=session_id, message="Which dock is mine?")

    (nested,) = _requests_of(openai_server, RESEARCHER_PROMPT)
    contents = [message["content"] for message in nested["messages"][1:]]
    if sees_history:
        assert contents == ["My dock is seven.", "Noted: your dock is seven.", "Which dock is mine?", "Which dock?"]
    else:
        assert contents == ["Which dock?"]


async def test_a_router_lets_the_chosen_collaborator_answer_the_user_itself(app, async_client_for, openai_server, settings):
    settings.CHAT_SITE_FEATURES = {"traces": {"enabled": True}}
    await sync_to_async(_team)({"type": "SUPERVISOR_ROUTER"})
    openai_server.script(
        by_agent(
            router=Reply(text="<answer>writer</answer>", prompt_tokens=20, completion_tokens=3),
            writer=Reply(text="Here is your text.", completion_tokens=4),
        )
    )

    _, events = await converse_sse(async_client_for("alice"), message="Write me a haiku.")

    assert "".join(data["text"] for name, data in events if name == "delta") == "Here is your text."
    routing = next(data for name, data in events if name == "trace" and "routing" in data)
    assert routing["routing"] == {"agentId": "writer"}
    assert len(openai_server.requests) == 2, "one routing call, then the writer"
    (writer,) = _requests_of(openai_server, WRITER_PROMPT)
    assert [m["content"] for m in writer["messages"][1:]] == ["Write me a haiku."]
    assert dict(events)["done"]["usage"]["inputTokens"] == 20 + 10


async def test_a_router_that_names_no_collaborator_falls_back_to_supervision(app, async_client_for, openai_server):
    await sync_to_async(_team)("SUPERVISOR_ROUTER")
    openai_server.script(by_agent(router=Reply(text="<answer>SUPERVISOR</answer>"), supervisor=Reply(text="I answer myself.")))

    answer = (await converse(async_client_for("alice"))).json()

    assert answer["response"] == "I answer myself."
    supervisor = [r for r in openai_server.requests if SUPERVISOR_PROMPT in _system(r)]
    assert {tool["name"] for tool in openai_server.offered_tools(openai_server.requests.index(supervisor[0]))} == {"researcher", "writer"}


async def test_disabled_collaboration_offers_no_collaborator(app, async_client_for, openai_server):
    await sync_to_async(_team)("DISABLED")
    openai_server.script([Reply(text="Alone.")])

    await converse(async_client_for("alice"))

    assert "tools" not in openai_server.requests[0]


async def test_a_collaborator_the_user_may_not_use_is_not_offered(app, async_client_for, openai_server):
    await sync_to_async(_team)(researcher_rules=[{"effect": "deny"}])
    openai_server.script([Reply(text="Without the researcher.")])

    await converse(async_client_for("alice"))

    assert [tool["name"] for tool in openai_server.offered_tools(0)] == ["writer"]


async def test_a_failing_collaborator_is_a_tool_error_and_the_turn_still_answers(app, async_client_for, openai_server):
    await sync_to_async(_team)()
    openai_server.script(
        by_agent(
            supervisor=[
                Reply(tool_calls=[ToolCall("researcher", {"request": "Look it up."}, id="call_x")]),
                Reply(text="The researcher is away."),
            ],
            researcher=Reply(status=400),
        )
    )

    answer = await converse(async_client_for("alice"))

    assert answer.status_code == 200 and answer.json()["response"] == "The researcher is away."
    ((call_id, error),) = openai_server.tool_results(len(openai_server.requests) - 1)
    assert call_id == "call_x" and "400" in error


async def test_the_demo_supervisor_asks_its_researcher_about_the_platform_offline(transactional_db, async_client_for):
    from django.core.management import call_command

    await sync_to_async(call_command)("seed_demo", verbosity=0)
    body = {"chatAppId": "demo", "agentId": "demo-supervisor", "features": {}, "source": "user"}

    answer = await converse(async_client_for("alice"), **body, message="What does the platform documentation say about rate limits?")

    assert answer.status_code == 200, answer.json()
    assert "[1]" in answer.json()["response"], "the researcher's cited finding reaches the answer"
