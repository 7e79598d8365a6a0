"""Bedrock calls of knowledge bases (docs/api.md, "Knowledge bases"): embeddings through InvokeModel and a provider
knowledge base's Retrieve API, through boto3 with the standard AWS variables (credentials,
AWS_REGION, and AWS_ENDPOINT_URL_BEDROCK_RUNTIME / _BEDROCK_AGENT_RUNTIME for a private endpoint).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings

_COHERE_BATCH = 96  # Cohere's limit of texts per request

# boto3 sessions are not thread-safe, clients are: one session builds them under a lock.
_lock = threading.Lock()
_clients: dict[str, Any] = {}


class RetrieveError(Exception):
    """The provider's knowledge base could not be queried; the message says why."""


class InvokeError(Exception):
    """An embedding model did not answer with embeddings; the message says why."""


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One result of Retrieve: the chunk's text, where it comes from, the provider's score."""

    text: str
    location: str
    chunk_id: str
    score: float


def _client(service: str, timeout: float) -> Any:
    with _lock:
        client = _clients.get(service)
        if client is None:
            config = Config(connect_timeout=min(5.0, timeout), read_timeout=timeout, retries={"max_attempts": 2, "mode": "standard"})
            client = _clients[service] = boto3.session.Session().client(service, config=config)
        return client


def forget_clients() -> None:
    """Drop the cached clients (tests point the endpoint variables elsewhere)."""
    with _lock:
        _clients.clear()


def _aws_error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": ")
    return str(exc)


def embed(model_id: str, texts: Sequence[str], *, purpose: str) -> list[list[float]]:
    """Titan (`amazon.titan-embed-*`: one text per call) or Cohere (`cohere.embed-*`: batches)."""
    client = _client("bedrock-runtime", settings.CHAT_EMBEDDING_TIMEOUT_SECONDS)
    if model_id.startswith("cohere."):
        requests = [
            {"texts": list(texts[start : start + _COHERE_BATCH]), "input_type": f"search_{purpose}"}
            for start in range(0, len(texts), _COHERE_BATCH)
        ]
    else:
        requests = [{"inputText": text} for text in texts]
    vectors: list[list[float]] = []
    try:
        for body in requests:
            response = client.invoke_model(
                modelId=model_id, body=json.dumps(body), contentType="application/json", accept="application/json"
            )
            answer = json.loads(response["body"].read())
            vectors.extend(answer["embeddings"] if "texts" in body else [answer["embedding"]])
    except (ClientError, BotoCoreError) as exc:
        raise InvokeError(f"bedrock:{model_id}: {_aws_error(exc)}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InvokeError(f"bedrock:{model_id}: the answer is not an embedding ({exc.__class__.__name__})") from None
    return vectors


def _location(location: dict[str, Any]) -> str:
    """The URI of a result's source, whatever the data source type (S3, web, Confluence, ...)."""
    for value in location.values():
        if isinstance(value, dict):
            for key in ("uri", "url"):
                if isinstance(value.get(key), str):
                    return value[key]
    return str(location.get("type", ""))


def retrieve(knowledge_base_id: str, query: str, *, top_k: int) -> list[Retrieved]:
    """Bedrock's Retrieve on the provider's knowledge base `knowledge_base_id`, best first."""
    client = _client("bedrock-agent-runtime", settings.CHAT_KB_RETRIEVE_TIMEOUT_SECONDS)
    try:
        response = client.retrieve(
            knowledgeBaseId=knowledge_base_id,
            retrievalQuery={"text": query},
            retrievalConfiguration={"vectorSearchConfiguration": {"numberOfResults": top_k}},
        )
    except (ClientError, BotoCoreError) as exc:
        raise RetrieveError(f"Bedrock knowledge base {knowledge_base_id}: {_aws_error(exc)}") from None
    results = []
    for index, item in enumerate(response.get("retrievalResults", [])):
        content = item.get("content") or {}
        location = _location(item.get("location") or {})
        metadata = item.get("metadata") or {}
        chunk_id = metadata.get("x-amz-bedrock-kb-chunk-id") or f"{location}#{index}"
        results.append(Retrieved(str(content.get("text", "")), location, str(chunk_id), float(item.get("score") or 0.0)))
    return results
