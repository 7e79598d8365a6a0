"""Model names (docs/api.md, "Models"): `offline`, `openai:<model>`, `anthropic:<model>`, `bedrock:<model>`.

Apart from chatplatform.llm so that validating an agent does not import the model library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROVIDERS = ("offline", "openai", "anthropic", "bedrock")
_ALLOWED_FORMS = "'offline', 'openai:<model>', 'anthropic:<model>' or 'bedrock:<model>'"
_MODEL_ID = re.compile(r"\S{1,200}")
# model_name_error's rule as one pattern, for the OpenAPI schema.
MODEL_NAME_PATTERN = f"^(?:offline|(?:{'|'.join(p for p in PROVIDERS if p != 'offline')}):\\S{{1,200}})$"


@dataclass(frozen=True)
class ModelRef:
    """A parsed model name: `provider` is one of PROVIDERS, `model` is empty for `offline`."""

    provider: str
    model: str = ""

    def __str__(self) -> str:
        return self.provider if self.provider == "offline" else f"{self.provider}:{self.model}"


def model_name_error(name: str) -> str | None:
    """Why `name` is not an accepted model name, or None when it is."""
    if not isinstance(name, str) or not name:
        return f"must be a model name: {_ALLOWED_FORMS}"
    if name == "offline":
        return None
    provider, sep, model = name.partition(":")
    if not sep or provider not in PROVIDERS or provider == "offline":
        return f"'{name}' names no known provider; use {_ALLOWED_FORMS}"
    # Model ids may themselves hold colons and slashes (Ollama's `llama3.1:8b`, Bedrock's `...-v1:0`, HF names).
    if not _MODEL_ID.fullmatch(model):
        return f"'{name}' needs a model id after '{provider}:' (1 to 200 characters, no spaces)"
    return None


def parse_model(name: str) -> ModelRef:
    """`openai:gpt-4o` → ModelRef("openai", "gpt-4o"); raises ValueError with model_name_error's message."""
    error = model_name_error(name)
    if error is not None:
        raise ValueError(error)
    if name == "offline":
        return ModelRef("offline")
    provider, _, model = name.partition(":")
    return ModelRef(provider, model)
