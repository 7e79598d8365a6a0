"""`chatplatform.llm.stream_reply` and `complete` against the scripted model server.

The real provider code (chatplatform/llm/providers: our Chat Completions client over aiohttp, and
pydantic-ai's Anthropic model) sits between the code under test and the server, so these tests
see what a real model would. Those marked `per_provider` run once for each scriptable provider:
the tool loop is the same for all of them (chatplatform/llm/loop.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest

from chatplatform import llm
from chatplatform.llm import HistoryMessage, ModelError, ReplyDone, TextDelta, ToolCallEvent, ToolResultEvent, ToolSpec, Usage
from tests.peers import Reply, ToolCall

MODEL = "openai:test-model"
PROVIDERS = ["openai:test-model", "anthropic:test-model"]
per_provider = pytest.mark.parametrize("model", PROVIDERS)
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}


async def collect(events: AsyncIterator[llm.ReplyEvent]) -> list[llm.ReplyEvent]:
    return [event async for event in events]


def reply_of(model: str = MODEL, **overrides: Any) -> AsyncIterator[llm.ReplyEvent]:
    arguments: dict[str, Any] = {"model": model, "system_prompt": "You are terse.", "history": [], "message": "Hi"}
    return llm.stream_reply(**{**arguments, **overrides})


def weather_tool(call: Any, *, timeout: float | None = None) -> ToolSpec:
    return ToolSpec(
        name="get_weather", description="Current weather of a city.", parameters_json_schema=WEATHER_SCHEMA, call=call, timeout=timeout
    )


@per_provider
async def test_streamed_deltas_arrive_in_order_and_concatenate_to_the_final_text(openai_server, model):
    openai_server.script([Reply(text="The quick brown fox jumps.", prompt_tokens=12, completion_tokens=6)])

    events = await collect(reply_of(model))

    deltas = [event.text for event in events if isinstance(event, TextDelta)]
    assert deltas == ["The ", "quick ", "brown ", "fox ", "jumps."]
    done = events[-1]
    assert isinstance(done, ReplyDone)
    assert done.text == "".join(deltas) == "The quick brown fox jumps."
    assert done.model == model
    assert done.limit_reached is False


@per_provider
async def test_usage_comes_from_the_servers_usage_fields(openai_server, model):
    openai_server.script([Reply(text="Fine.", prompt_tokens=123, completion_tokens=45)])

    done = (await collect(reply_of(model)))[-1]

    assert done.usage == Usage(input_tokens=123, output_tokens=45, requests=1)
    assert done.usage.total_tokens == 168


async def test_system_prompt_history_and_message_reach_the_server_exactly_and_in_order(openai_server):
    openai_server.script([Reply(text="Noted.")])
    history = [
        HistoryMessage("user", "My name is Ada."),
        HistoryMessage("assistant", "Hello Ada!"),
        HistoryMessage("user", "I like <b>tags</b> & symbols."),
        HistoryMessage("assistant", "So do I."),
    ]

    await collect(reply_of(system_prompt="You are the Acme assistant.\nBe brief.", history=history, message="What is my name?"))

    (request,) = openai_server.requests
    assert openai_server.headers[0]["authorization"] == "Bearer test-key"
    assert request["model"] == "test-model"
    assert request["stream"] is True
    assert request["messages"] == [
        {"role": "system", "content": "You are the Acme assistant.\nBe brief."},
        {"role": "user", "content": "My name is Ada."},
        {"role": "assistant", "content": "Hello Ada!"},
        {"role": "user", "content": "I like <b>tags</b> & symbols."},
        {"role": "assistant", "content": "So do I."},
        {"role": "user", "content": "What is my name?"},
    ]
    assert "tools" not in request


@per_provider
async def test_a_tool_call_round_trip_calls_the_tool_and_sends_its_result_back(openai_server, model):
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"}, id="call_1")], prompt_tokens=30, completion_tokens=8),
            Reply(text="Sunny in Paris.", prompt_tokens=50, completion_tokens=5),
        ]
    )
    received: list[dict[str, Any]] = []

    async def get_weather(arguments: dict[str, Any]) -> dict[str, Any]:
        received.append(arguments)
        return {"forecast": "sunny", "celsius": 21}

    events = await collect(reply_of(model, message="Weather in Paris?", tools=[weather_tool(get_weather)]))

    assert received == [{"city": "Paris"}]
    call, result, *texts, done = events
    assert call == ToolCallEvent(call_id="call_1", name="get_weather", arguments={"city": "Paris"})
    assert isinstance(result, ToolResultEvent)
    assert (result.call_id, result.name, result.arguments) == ("call_1", "get_weather", {"city": "Paris"})
    assert result.result == {"forecast": "sunny", "celsius": 21}
    assert result.error is None
    assert result.duration >= 0
    assert "".join(t.text for t in texts) == done.text == "Sunny in Paris."
    assert done.usage == Usage(input_tokens=80, output_tokens=13, requests=2)

    (offered,) = openai_server.offered_tools(0)
    assert offered["name"] == "get_weather"
    assert offered["description"] == "Current weather of a city."
    assert offered["parameters"]["properties"] == WEATHER_SCHEMA["properties"]
    assert offered["parameters"]["required"] == ["city"]
    assert openai_server.tool_results(1) == [("call_1", '{"forecast":"sunny","celsius":21}')]


@per_provider
async def test_the_tool_schema_given_is_not_modified(openai_server, model):
    openai_server.script([Reply(text="ok")])
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}

    async def noop(arguments: dict[str, Any]) -> str:
        return ""

    await collect(reply_of(model, tools=[ToolSpec("get_weather", "d", schema, noop)]))

    assert schema == {"type": "object", "properties": {"city": {"type": "string"}}}


@per_provider
async def test_a_failing_tool_gives_the_model_an_error_result_and_the_turn_still_answers(openai_server, model):
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("get_weather", {"city": "Oslo"}, id="call_9")]),
            Reply(text="The weather service is down, sorry."),
        ]
    )

    async def broken(arguments: dict[str, Any]) -> Any:
        raise RuntimeError("weather service unreachable")

    events = await collect(reply_of(model, tools=[weather_tool(broken)]))

    result = next(event for event in events if isinstance(event, ToolResultEvent))
    assert result.result is None
    assert result.error == "RuntimeError: weather service unreachable"
    assert events[-1].text == "The weather service is down, sorry."
    ((call_id, content),) = openai_server.tool_results(1)
    assert call_id == "call_9" and "weather service unreachable" in content


@per_provider
async def test_a_tool_slower_than_its_timeout_gives_the_model_a_timeout_error(openai_server, model):
    openai_server.script([Reply(tool_calls=[ToolCall("get_weather", {"city": "Rome"})]), Reply(text="Too slow.")])

    async def slow(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(5)
        return "never"

    started = time.perf_counter()
    events = await collect(reply_of(model, tools=[weather_tool(slow, timeout=0.02)]))

    assert time.perf_counter() - started < 2
    result = next(event for event in events if isinstance(event, ToolResultEvent))
    assert result.error == "the tool did not answer within 0.02 s"
    assert "did not answer within 0.02 s" in openai_server.tool_results(1)[0][1]
    assert events[-1].text == "Too slow."


@per_provider
async def test_tool_calls_of_one_model_response_run_concurrently(openai_server, model):
    openai_server.script(
        [
            Reply(tool_calls=[ToolCall("get_weather", {"city": "A"}, id="a"), ToolCall("get_weather", {"city": "B"}, id="b")]),
            Reply(text="Both done."),
        ]
    )
    started = {"A": asyncio.Event(), "B": asyncio.Event()}

    async def meet_the_other(arguments: dict[str, Any]) -> str:
        # Each call waits until the other has started: run one after the other, the first one times out.
        me, other = arguments["city"], "B" if arguments["city"] == "A" else "A"
        started[me].set()
        await asyncio.wait_for(started[other].wait(), timeout=2)
        return f"met {other}"

    events = await collect(reply_of(model, tools=[weather_tool(meet_the_other)]))

    results = {event.call_id: event for event in events if isinstance(event, ToolResultEvent)}
    assert results["a"].result == "met B" and results["b"].result == "met A"
    # Results reach the model in the order of the calls, whichever finished first.
    assert [call_id for call_id, _ in openai_server.tool_results(1)] == ["a", "b"]


@per_provider
async def test_the_tool_loop_stops_after_max_round_trips_with_a_final_answer(openai_server, model):
    openai_server.script(lambda body: Reply(tool_calls=[ToolCall("get_weather", {"city": "Loop"})], prompt_tokens=10, completion_tokens=2))
    calls: list[dict[str, Any]] = []

    async def record(arguments: dict[str, Any]) -> str:
        calls.append(arguments)
        return "again"

    events = await collect(reply_of(model, tools=[weather_tool(record)], max_round_trips=3))

    done = events[-1]
    assert isinstance(done, ReplyDone)
    assert done.limit_reached is True
    assert "3 model round trips" in done.text
    assert done.text == "".join(event.text for event in events if isinstance(event, TextDelta))
    assert len(openai_server.requests) == 3
    assert done.usage == Usage(input_tokens=30, output_tokens=6, requests=3)
    # The tool calls of the last allowed response run before the loop stops.
    assert len(calls) == 3


@per_provider
async def test_text_before_a_tool_call_and_the_final_answer_are_separated(openai_server, model):
    openai_server.script([Reply(text="Let me check.", tool_calls=[ToolCall("get_weather", {"city": "Nice"})]), Reply(text="It is warm.")])

    async def warm(arguments: dict[str, Any]) -> str:
        return "warm"

    events = await collect(reply_of(model, tools=[weather_tool(warm)]))

    assert events[-1].text == "Let me check.\n\nIt is warm."
    assert events[-1].text == "".join(event.text for event in events if isinstance(event, TextDelta))


@pytest.mark.parametrize(("status", "attempts"), [(500, 3), (503, 3), (400, 1), (401, 1)])
async def test_a_provider_error_raises_model_error_after_the_sdk_retries(openai_server, status, attempts):
    # 5xx (and 408/409/429) are retried twice, as the OpenAI SDK does; `retry-after-ms` keeps the backoff instant here.
    openai_server.script([Reply(status=status, headers={"retry-after-ms": "1"})] * attempts)

    with pytest.raises(ModelError) as caught:
        await collect(reply_of())

    assert caught.value.status_code == status
    assert str(status) in str(caught.value)
    assert len(openai_server.requests) == attempts


async def test_an_unknown_model_name_raises_model_error():
    with pytest.raises(ModelError, match="names no known provider"):
        await collect(reply_of(model="gpt-4o"))


async def test_openai_without_a_key_or_base_url_raises_model_error(settings):
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = None
    llm.clear_model_cache()
    try:
        with pytest.raises(ModelError, match="OPENAI_API_KEY"):
            await collect(reply_of())
    finally:
        llm.clear_model_cache()


async def test_a_local_server_needs_no_api_key(openai_server, settings):
    settings.OPENAI_API_KEY = None
    llm.clear_model_cache()
    openai_server.script([Reply(text="No key needed.")])

    done = (await collect(reply_of()))[-1]

    assert done.text == "No key needed."
    assert openai_server.headers[0]["authorization"] == "Bearer not-set"


async def test_leaving_the_stream_early_closes_it_cleanly(openai_server):
    openai_server.script([Reply(text="one two three four five six", token_delay=0.01), Reply(text="next turn")])

    async with aclosing(reply_of()) as events:
        async for event in events:
            assert event == TextDelta("one ")
            break

    # The model stays usable for the next turn.
    assert (await collect(reply_of()))[-1].text == "next turn"


async def test_complete_returns_the_text_and_usage_of_one_non_streamed_request(openai_server):
    openai_server.script([Reply(text="Trip to Lisbon", prompt_tokens=40, completion_tokens=3)])

    completion = await llm.complete(model=MODEL, system_prompt="Write a title.", prompt="Plan my trip to Lisbon")

    assert completion == llm.Completion(text="Trip to Lisbon", usage=Usage(input_tokens=40, output_tokens=3, requests=1))
    (request,) = openai_server.requests
    assert not request.get("stream")
    assert request["messages"] == [{"role": "system", "content": "Write a title."}, {"role": "user", "content": "Plan my trip to Lisbon"}]


async def test_complete_raises_model_error_when_the_timeout_passes(openai_server):
    openai_server.script([Reply(text="too late", first_token_delay=2)])

    started = time.perf_counter()
    with pytest.raises(ModelError, match=r"no answer within 0\.05 s"):
        await llm.complete(model=MODEL, system_prompt="", prompt="Hi", timeout=0.05)

    assert time.perf_counter() - started < 1


async def test_first_delta_arrives_at_the_servers_first_token_delay(openai_server):
    words = " ".join(f"w{i}" for i in range(10))
    openai_server.script([Reply(text=words, first_token_delay=0.3, token_delay=0.02)])

    started = time.perf_counter()
    first_at = None
    async for event in reply_of():
        if isinstance(event, TextDelta) and first_at is None:
            first_at = time.perf_counter() - started
        if isinstance(event, ReplyDone):
            done_at = time.perf_counter() - started
            assert event.text == words

    # Measured, not asserted: about 0.3 s means no layer buffers the stream (the whole reply takes ~0.5 s).
    print(f"\nTTFT {first_at * 1000:.0f} ms (server: 300 ms), full reply {done_at * 1000:.0f} ms (server: ~480 ms)")


async def test_many_concurrent_streams_are_served_in_parallel(openai_server):
    openai_server.script(lambda body: Reply(text="a b c d e f g h i j", first_token_delay=0.05, token_delay=0.005))
    streams = 50

    started = time.perf_counter()
    results = await asyncio.gather(*(collect(reply_of(message=f"m{i}")) for i in range(streams)))
    elapsed = time.perf_counter() - started

    assert all(events[-1].text == "a b c d e f g h i j" for events in results)
    # One after the other they would take 50 × ~0.1 s.
    assert elapsed < 2.5
    print(f"\n{streams} concurrent streams in {elapsed * 1000:.0f} ms")


async def test_bedrock_without_aws_credentials_fails_the_turn_with_model_error(monkeypatch):
    # botocore refuses to sign the request before any network traffic; pydantic-ai does not map that error.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    llm.clear_model_cache()
    try:
        with pytest.raises(ModelError, match="Unable to locate credentials"):
            await collect(reply_of(model="bedrock:amazon.nova-micro-v1:0"))
    finally:
        llm.clear_model_cache()


async def test_a_request_the_script_did_not_expect_fails_at_once(openai_server):
    openai_server.script([])

    with pytest.raises(ModelError, match="no reply left"):
        await collect(reply_of())

    assert openai_server.unscripted == 1
