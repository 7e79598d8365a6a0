"""Instruction augmentation through converse: candidates, the selection call, and what reaches the model."""

from __future__ import annotations

import re

import pytest

from chat.sessions.models import ChatMessage
from tests.converse.helpers import converse
from tests.factories import SemanticDirectiveFactory
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

AUGMENTATION = {"instructionAugmentation": {"enabled": True}}
ENTITY = {"entity": {"enabled": True, "attributeName": "company"}}
IN_SCOPE = {
    "chatapp#support": "app-rule",
    "agent#helper": "agent-rule",
    "tool#search@1": "tool-rule",
    "entity#acme": "entity-rule",
    "agent#helper#entity#acme": "agent-entity-rule",
}
OUT_OF_SCOPE = {
    "chatapp#other": "other-app-rule",
    "agent#other": "other-agent-rule",
    "tool#other@1": "other-tool-rule",
    "entity#globex": "other-entity-rule",
    "agent#other#entity#acme": "other-agent-entity-rule",
}


@pytest.fixture
def directives(app, settings):
    settings.CHAT_SITE_FEATURES = {**AUGMENTATION, **ENTITY}
    app.features = AUGMENTATION
    app.save()
    app.agent.tool_ids = ["search@1"]
    app.agent.save()
    for scope, directive_id in {**IN_SCOPE, **OUT_OF_SCOPE}.items():
        SemanticDirectiveFactory(scope=scope, directive_id=directive_id, instructions=f"INSTRUCTION {directive_id}.")


def offered_ids(selection_request: dict) -> set[str]:
    return set(re.findall(r'- id: "([^"]+)"', selection_request["messages"][-1]["content"]))


def main_system_prompt(request: dict) -> str:
    return request["messages"][0]["content"]


async def test_selection_is_offered_exactly_the_directives_of_the_turns_scopes(directives, async_client_for, openai_server):
    openai_server.script([Reply(text='<answer>["agent-rule", "entity-rule", "made-up"]</answer>'), Reply(text="Answer.")])

    response = await converse(async_client_for("alice", custom_data={"company": "acme"}), message="What's new?")

    assert response.status_code == 200, response.json()
    selection, main = openai_server.requests
    assert "stream" not in selection or not selection["stream"]
    assert offered_ids(selection) == set(IN_SCOPE.values())
    assert "What's new?" in selection["messages"][-1]["content"]
    prompt = main_system_prompt(main)
    assert "INSTRUCTION agent-rule." in prompt and "INSTRUCTION entity-rule." in prompt
    assert "INSTRUCTION app-rule." not in prompt and "INSTRUCTION tool-rule." not in prompt
    assert all("INSTRUCTION" not in m["content"] for m in main["messages"][1:])


async def test_without_an_entity_value_only_the_entityless_scopes_are_candidates(directives, async_client_for, openai_server):
    openai_server.script([Reply(text="<answer>[]</answer>"), Reply(text="Answer.")])

    await converse(async_client_for("alice"))

    assert offered_ids(openai_server.requests[0]) == {"app-rule", "agent-rule", "tool-rule"}
    assert "INSTRUCTION" not in main_system_prompt(openai_server.requests[1])


@pytest.mark.parametrize(
    "selection_reply",
    [
        Reply(status=400),
        Reply(text="I think agent-rule applies."),
        Reply(text="<answer>agent-rule</answer>"),
        Reply(text='<answer>{"id": "agent-rule"}</answer>'),
        Reply(text="<answer>[1, 2]</answer>"),
    ],
    ids=["provider-error", "no-answer-tag", "not-json", "not-a-list", "not-ids"],
)
async def test_a_failed_or_unreadable_selection_adds_nothing_and_the_turn_goes_on(
    directives, async_client_for, openai_server, selection_reply
):
    openai_server.script([selection_reply, Reply(text="Still answered.")])

    response = await converse(async_client_for("alice"))

    assert response.status_code == 200, response.json()
    assert response.json()["response"] == "Still answered."
    assert "INSTRUCTION" not in main_system_prompt(openai_server.requests[1])
    stored = await ChatMessage.objects.filter(source="assistant").aget()
    (selection_trace,) = [trace for trace in stored.traces if trace["stage"] == "selection"]
    assert selection_trace["chosen"] == [] and selection_trace.get("error")


async def test_a_selection_slower_than_its_time_limit_is_abandoned(directives, async_client_for, openai_server, settings):
    settings.CHAT_SELECTION_TIMEOUT_SECONDS = 0.2
    openai_server.script([Reply(text='<answer>["agent-rule"]</answer>', first_token_delay=2.0), Reply(text="On time.")])

    response = await converse(async_client_for("alice"))

    assert response.json()["response"] == "On time."
    assert "INSTRUCTION" not in main_system_prompt(openai_server.requests[1])


async def test_no_selection_call_happens_when_augmentation_is_off_for_the_app(directives, app, async_client_for, openai_server):
    app.features = {"instructionAugmentation": {"enabled": False}}
    await app.asave()
    openai_server.script([Reply(text="Plain.")])

    await converse(async_client_for("alice"))

    assert len(openai_server.requests) == 1 and openai_server.requests[0]["stream"] is True


async def test_no_selection_call_happens_when_the_request_switches_augmentation_off(directives, async_client_for, openai_server):
    openai_server.script([Reply(text="Plain.")])

    await converse(async_client_for("alice"), features={"instructionAugmentation": {"enabled": False}})

    assert len(openai_server.requests) == 1


async def test_no_selection_call_happens_without_candidates(app, async_client_for, openai_server, settings):
    settings.CHAT_SITE_FEATURES = AUGMENTATION
    app.features = AUGMENTATION
    await app.asave()
    openai_server.script([Reply(text="Plain.")])

    await converse(async_client_for("alice"))

    assert len(openai_server.requests) == 1
