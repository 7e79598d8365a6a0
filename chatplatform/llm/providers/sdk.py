"""`anthropic:` and `bedrock:` models through pydantic-ai's model layer (its direct API: one
request at a time, no agent graph). The only module that imports pydantic-ai.

The SDK clients are built without retries of their own: the tool loop retries (a retry must not
happen once text has streamed, which only the loop knows). Model objects are built on first use
and cached per name, so their HTTP clients and pooled connections are reused across turns.
"""

from __future__ import annotations

import threading
from typing import Any

import pydantic_ai
from django.conf import settings
from pydantic_ai import (
    BinaryContent,
    ModelAPIError,
    ModelHTTPError,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserError,
    UserPromptPart,
)
from pydantic_ai import ModelRequest as SdkRequest
from pydantic_ai import ModelResponse as SdkResponse
from pydantic_ai.direct import model_request, model_request_stream
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from chatplatform.llm.types import (
    AssistantTurn,
    Completion,
    HistoryMessage,
    ModelError,
    ModelRequest,
    ModelResponse,
    Sink,
    ToolCall,
    ToolOutput,
    Usage,
    describe,
)
from chatplatform.model_names import ModelRef

# pydantic-ai prints a welcome banner on the first run in an interactive terminal; a server never wants it.
pydantic_ai.BANNER_ENABLED = False
CONNECT_TIMEOUT = 10.0

_models: dict[str, Model] = {}
_models_lock = threading.Lock()


def clear() -> None:
    with _models_lock:
        _models.clear()


def model_for(ref: ModelRef) -> Model:
    key = str(ref)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            try:
                model = _models[key] = _build(ref)
            except Exception as exc:  # a missing key or region: the provider's configuration
                raise ModelError(f"{key}: {describe(exc) if not isinstance(exc, UserError) else exc}") from exc
        return model


def _build(ref: ModelRef) -> Model:
    if ref.provider == "anthropic":
        from anthropic import AsyncAnthropic
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        # Its httpx client honours the proxy variables.
        client = AsyncAnthropic(api_key=settings.ANTHROPIC_API_KEY, base_url=settings.ANTHROPIC_BASE_URL, max_retries=0)
        return AnthropicModel(ref.model, provider=AnthropicProvider(anthropic_client=client))
    if ref.provider == "bedrock":
        import boto3
        from botocore.config import Config
        from pydantic_ai.models.bedrock import BedrockConverseModel
        from pydantic_ai.providers.bedrock import BedrockProvider

        config = Config(connect_timeout=CONNECT_TIMEOUT, read_timeout=600, retries={"total_max_attempts": 1})
        return BedrockConverseModel(ref.model, provider=BedrockProvider(bedrock_client=boto3.client("bedrock-runtime", config=config)))
    raise ModelError(f"model '{ref}': unknown provider")


# --- Translation ---------------------------------------------------------------------------------


def _user_content(message: HistoryMessage) -> str | list[Any]:
    if not message.attachments:
        return message.text
    content: list[Any] = [message.text]
    for attachment in message.attachments:
        content.append(BinaryContent(attachment.data, media_type=attachment.mime_type) if attachment.is_image else attachment.as_text())
    return content


def _messages(request: ModelRequest) -> list[SdkRequest | SdkResponse]:
    out: list[SdkRequest | SdkResponse] = []
    for message in request.messages:
        if isinstance(message, HistoryMessage) and message.role == "user":
            out.append(SdkRequest(parts=[UserPromptPart(_user_content(message))]))
        elif isinstance(message, HistoryMessage):
            out.append(SdkResponse(parts=[TextPart(message.text)]))
        elif isinstance(message, AssistantTurn):
            calls = [ToolCallPart(c.name, c.arguments, tool_call_id=c.id) for c in message.tool_calls]
            out.append(SdkResponse(parts=[*([TextPart(message.text)] if message.text else []), *calls]))
        else:
            assert isinstance(message, ToolOutput)
            part = ToolReturnPart(
                message.call.name, message.content, tool_call_id=message.call.id, outcome="failed" if message.error else "success"
            )
            if out and isinstance(out[-1], SdkRequest) and isinstance(out[-1].parts[-1], ToolReturnPart):
                out[-1] = SdkRequest(parts=[*out[-1].parts, part])  # the results of one response go back together
            else:
                out.append(SdkRequest(parts=[part]))
    last = out[-1]
    assert isinstance(last, SdkRequest)
    out[-1] = SdkRequest(parts=last.parts, instructions=request.system_prompt or None)  # the most recent request's instructions apply
    return out


def _parameters(request: ModelRequest) -> ModelRequestParameters:
    tools = [
        ToolDefinition(name=t.name, description=t.description, parameters_json_schema=dict(t.parameters_json_schema)) for t in request.tools
    ]
    return ModelRequestParameters(function_tools=tools, allow_text_output=True)


def _error(ref: ModelRef, exc: Exception) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, ModelHTTPError):
        return ModelError(f"{ref}: {exc}", status_code=exc.status_code, retryable=exc.status_code == 429 or exc.status_code >= 500)
    # A failure to reach the provider at all (connection refused, reset) may pass.
    return ModelError(f"{ref}: {describe(exc) if not isinstance(exc, UserError) else exc}", retryable=isinstance(exc, ModelAPIError))


def _usage(usage: Any) -> Usage:
    return Usage(usage.input_tokens, usage.output_tokens, 1)


async def stream(ref: ModelRef, request: ModelRequest, sink: Sink) -> ModelResponse:
    text: list[str] = []
    try:
        async with model_request_stream(model_for(ref), _messages(request), model_request_parameters=_parameters(request)) as events:
            async for event in events:
                chunk = ""
                if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
                    chunk = event.part.content
                elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
                    chunk = event.delta.content_delta
                if chunk:
                    text.append(chunk)
                    sink.text(chunk)
                elif isinstance(event, PartStartEvent | PartDeltaEvent):  # a tool call's tokens
                    sink.alive()
            response, usage = events.get(), events.usage
    except Exception as exc:
        raise _error(ref, exc) from exc
    calls = tuple(ToolCall(p.tool_call_id, p.tool_name, p.args_as_json_str()) for p in response.parts if isinstance(p, ToolCallPart))
    return ModelResponse("".join(text), calls, _usage(usage))


async def complete(ref: ModelRef, request: ModelRequest) -> Completion:
    try:
        response = await model_request(model_for(ref), _messages(request), model_request_parameters=_parameters(request))
    except Exception as exc:
        raise _error(ref, exc) from exc
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    return Completion(text=text, usage=_usage(response.usage))
