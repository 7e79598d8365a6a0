"""Model providers: each translates a `ModelRequest` into its API and streams the answer into a `Sink`.

A provider is a module with two coroutine functions:

    async def stream(ref: ModelRef, request: ModelRequest, sink: Sink) -> ModelResponse
    async def complete(ref: ModelRef, request: ModelRequest) -> Completion

and raises `ModelError` (with `retryable` set for failures that may pass) for anything that goes
wrong. The tool loop, the timeouts and the retries are the caller's (`chatplatform.llm.loop`).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from chatplatform.model_names import ModelRef

# `anthropic:` and `bedrock:` go through pydantic-ai's model layer (`sdk`); the others are ours.
_MODULES = {"offline": "offline", "openai": "openai", "anthropic": "sdk", "bedrock": "sdk"}


def for_ref(ref: ModelRef) -> ModuleType:
    # Imported on first use: the provider SDKs take seconds to import.
    return import_module(f"chatplatform.llm.providers.{_MODULES[ref.provider]}")
