"""A turn that fails, through the OpenAI doors (docs/doors.md): the SDK raises its own errors, a
stream ends with OpenAI's error, and what was streamed is kept as the failed answer."""

from __future__ import annotations

import openai
import pytest

from chat.models import ChatMessage
from chat.turn import wait_for_running_turns
from tests.peers import Reply

pytestmark = pytest.mark.django_db(transaction=True)

DIES = Reply(text="one two three four five", break_after=2)  # the model server drops the connection after two chunks


async def test_a_completion_whose_model_fails_raises_the_sdks_server_error(app, openai_for, openai_server):
    openai_server.script([DIES])

    with pytest.raises(openai.InternalServerError) as failed:
        await openai_for("alice").chat.completions.create(model="support", messages=[{"role": "user", "content": "Count"}])
    await wait_for_running_turns()

    assert failed.value.status_code == 502
    assert failed.value.body["type"] == "server_error"
    assert failed.value.response.headers["X-Chat-Session-Id"]
    answer = await ChatMessage.objects.aget(source="assistant")
    assert (answer.message, answer.error["code"]) == ("one two ", "INTERNAL_ERROR")


async def test_a_streamed_completion_whose_model_fails_ends_with_openais_error(app, openai_for, openai_server):
    openai_server.script([DIES])
    stream = await openai_for("alice").chat.completions.create(
        model="support", messages=[{"role": "user", "content": "Count"}], stream=True
    )

    text = []
    with pytest.raises(openai.APIError) as failed:
        async for chunk in stream:
            text.append(chunk.choices[0].delta.content or "")
    await wait_for_running_turns()

    assert "".join(text) == "one two "
    assert failed.value.body["code"] == "INTERNAL_ERROR"
    assert failed.value.message.startswith("the model provider failed")


async def test_a_streamed_response_whose_model_fails_ends_with_response_failed(app, openai_for, openai_server):
    openai_server.script([DIES])
    client = openai_for("alice")

    events = [event async for event in await client.responses.create(model="support", input="Count", stream=True)]
    await wait_for_running_turns()

    assert events[-1].type == "response.failed"
    failed = events[-1].response
    assert (failed.status, failed.error.code, failed.output_text) == ("failed", "INTERNAL_ERROR", "one two ")
    stored = await client.responses.retrieve(failed.id)
    assert (stored.status, stored.error.code) == ("failed", "INTERNAL_ERROR")
