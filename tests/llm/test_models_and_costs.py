"""Model names, the built-in offline model and cost computation of `chatplatform.llm`."""

from __future__ import annotations

import pytest

from chatplatform import llm, model_names
from chatplatform.llm import HistoryMessage, ModelRef, ReplyDone, TextDelta, Usage


async def offline_events(message: str, history: list[HistoryMessage] | None = None) -> list[llm.ReplyEvent]:
    return [event async for event in llm.stream_reply(model="offline", system_prompt="Be nice.", history=history or [], message=message)]


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("offline", ModelRef("offline")),
        ("openai:gpt-4o-mini", ModelRef("openai", "gpt-4o-mini")),
        ("openai:llama3.1:8b", ModelRef("openai", "llama3.1:8b")),
        ("openai:meta-llama/Llama-3.1-8B-Instruct", ModelRef("openai", "meta-llama/Llama-3.1-8B-Instruct")),
        ("anthropic:claude-sonnet-4-5", ModelRef("anthropic", "claude-sonnet-4-5")),
        ("bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0", ModelRef("bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0")),
    ],
)
def test_accepted_model_names_parse_into_provider_and_model(name, ref):
    assert model_names.model_name_error(name) is None
    assert model_names.parse_model(name) == ref
    assert str(ref) == name


@pytest.mark.parametrize("name", ["gpt-4o", "google:gemini-2.5", "offline:echo", "OpenAI:gpt-4o", "", ":gpt-4o"])
def test_unknown_providers_get_an_error_naming_the_allowed_forms(name):
    error = model_names.model_name_error(name)

    assert error is not None
    for form in ("'offline'", "'openai:<model>'", "'anthropic:<model>'", "'bedrock:<model>'"):
        assert form in error
    with pytest.raises(ValueError, match="offline"):
        model_names.parse_model(name)


@pytest.mark.parametrize("name", ["openai:", "anthropic:with space", "bedrock:" + "x" * 201])
def test_a_known_provider_without_a_valid_model_id_is_refused(name):
    assert "needs a model id" in model_names.model_name_error(name)


def test_building_a_bedrock_or_anthropic_model_name_needs_no_credentials():
    # Parsing and validating never touches the provider: credentials are only needed for a turn.
    assert model_names.model_name_error("bedrock:amazon.nova-pro-v1:0") is None
    assert model_names.parse_model("anthropic:claude-haiku-4-5").provider == "anthropic"


async def test_the_offline_model_echoes_the_message_in_several_deltas():
    events = await offline_events("Hello   there, robot!")

    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    done = events[-1]
    assert isinstance(done, ReplyDone)
    assert len(deltas) > 2
    assert "".join(deltas) == done.text == "You said: Hello there, robot!"
    assert done.model == "offline"


async def test_the_offline_model_is_deterministic_and_counts_plausible_tokens():
    first, second = await offline_events("What is the weather like?"), await offline_events("What is the weather like?")
    longer = await offline_events("What is the weather like?", [HistoryMessage("user", "A long earlier question " * 20)])

    assert first == second
    usage = first[-1].usage
    # "You said: What is the weather like?": 7 words, 9 with punctuation.
    assert 7 <= usage.output_tokens <= 9
    assert usage.requests == 1
    assert usage.input_tokens >= 7  # system prompt + message
    assert longer[-1].usage.input_tokens >= usage.input_tokens + 80


async def test_the_offline_model_shortens_long_messages():
    done = (await offline_events("word " * 200))[-1]

    assert done.text.startswith("You said: word word")
    assert done.text.endswith("…")
    assert len(done.text) < 300


async def test_complete_with_the_offline_model_echoes_the_prompt():
    completion = await llm.complete(model="offline", system_prompt="Title this.", prompt="Plan a trip")

    assert completion.text == "You said: Plan a trip"
    assert completion.usage.requests == 1
    assert 5 <= completion.usage.output_tokens <= 6
    assert completion.usage.input_tokens >= 5


PRICES = {
    "default": {"input": 0.001, "output": 0.002},
    "openai:gpt-4o": {"input": 0.0025, "output": 0.01},
}


def test_cost_uses_the_models_price_per_thousand_tokens():
    assert llm.cost("openai:gpt-4o", Usage(input_tokens=2000, output_tokens=500), PRICES) == llm.Cost(
        input_cost=0.005, output_cost=0.005, total_cost=0.01
    )


def test_cost_falls_back_to_the_default_price():
    assert llm.cost("anthropic:claude-haiku-4-5", Usage(input_tokens=1000, output_tokens=3000), PRICES) == llm.Cost(
        input_cost=0.001, output_cost=0.006, total_cost=0.007
    )


def test_cost_is_zero_without_a_price_or_default():
    assert llm.cost("offline", Usage(input_tokens=10, output_tokens=10), {"openai:gpt-4o": PRICES["openai:gpt-4o"]}) == llm.Cost(
        0.0, 0.0, 0.0
    )


async def test_history_roles_other_than_user_and_assistant_are_refused():
    with pytest.raises(ValueError, match="history role"):
        await offline_events("x", [HistoryMessage("system", "x")])  # type: ignore[arg-type]
