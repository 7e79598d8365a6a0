"""Embedding models (docs/api.md, "Knowledge bases"): `openai:<model>` through `POST /embeddings` at
OPENAI_BASE_URL, `bedrock:<model>` through Bedrock's InvokeModel (chatplatform.bedrock).

The OpenAI call goes through httpx with `trust_env`, so HTTPS_PROXY/NO_PROXY and SSL_CERT_FILE
are honoured, with a connect timeout and CHAT_EMBEDDING_TIMEOUT_SECONDS for the rest; 429 and
5xx answers are retried twice. Every failure surfaces as `EmbeddingError`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import orjson
from django.conf import settings

if TYPE_CHECKING:
    import httpx

Purpose = Literal["document", "query"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
_OPENAI_BATCH = 128  # inputs per request: far under OpenAI's 2,048, small enough to retry cheaply
_RETRIES = 2
_client: httpx.Client | None = None
_client_lock = threading.Lock()


class EmbeddingError(Exception):
    """The embedding provider failed or answered something unusable; the message says which."""


def _http() -> httpx.Client:
    import httpx  # at the first embedding: not when Django starts

    global _client
    with _client_lock:
        if _client is None:
            timeout = httpx.Timeout(settings.CHAT_EMBEDDING_TIMEOUT_SECONDS, connect=min(5.0, settings.CHAT_EMBEDDING_TIMEOUT_SECONDS))
            _client = httpx.Client(trust_env=True, timeout=timeout, follow_redirects=False)
        return _client


def _retry_after(response: httpx.Response, attempt: int) -> float:
    try:
        return min(float(response.headers.get("retry-after", "")), 10.0)
    except ValueError:
        return 0.5 * 2**attempt


def _openai_batch(model: str, texts: Sequence[str]) -> list[list[float]]:
    # Read per call, as the chat models do: tests change them.
    base_url = (settings.OPENAI_BASE_URL or DEFAULT_OPENAI_BASE_URL).rstrip("/")
    api_key = settings.OPENAI_API_KEY
    if not api_key and not settings.OPENAI_BASE_URL:
        raise EmbeddingError(f"openai:{model}: set OPENAI_API_KEY, or OPENAI_BASE_URL for a compatible server that needs no key")
    headers = {"Authorization": f"Bearer {api_key or 'not-set'}", "Content-Type": "application/json"}
    import httpx

    body = orjson.dumps({"model": model, "input": list(texts), "encoding_format": "float"})
    host = httpx.URL(base_url).host
    for attempt in range(_RETRIES + 1):
        try:
            response = _http().post(f"{base_url}/embeddings", content=body, headers=headers)
        except httpx.HTTPError as exc:
            if attempt < _RETRIES and isinstance(exc, httpx.ConnectError | httpx.RemoteProtocolError):
                time.sleep(0.5 * 2**attempt)
                continue
            raise EmbeddingError(f"openai:{model}: {host} could not be reached ({exc.__class__.__name__}: {exc})") from None
        if (response.status_code == 429 or response.status_code >= 500) and attempt < _RETRIES:
            time.sleep(_retry_after(response, attempt))
            continue
        if response.status_code != 200:
            raise EmbeddingError(f"openai:{model}: {host} answered {response.status_code}: {response.text[:300]}")
        try:
            data = sorted(orjson.loads(response.content)["data"], key=lambda item: item["index"])
            vectors = [item["embedding"] for item in data]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"openai:{model}: the answer is not an embeddings list ({exc.__class__.__name__})") from None
        if len(vectors) != len(texts):
            raise EmbeddingError(f"openai:{model}: asked for {len(texts)} embeddings, got {len(vectors)}")
        return vectors
    raise AssertionError("unreachable")


def embed(texts: Sequence[str], *, model: str, purpose: Purpose = "document") -> list[list[float]]:
    """One vector per text, in order, from `model` (`openai:<id>` or `bedrock:<id>`).

    `purpose` tells models that embed queries and documents differently (Cohere on Bedrock) which
    one this is. Raises EmbeddingError; never returns a partial list.
    """
    provider, _, model_id = model.partition(":")
    if not texts:
        return []
    vectors: list[list[float]] = []
    if provider == "openai":
        for start in range(0, len(texts), _OPENAI_BATCH):
            vectors.extend(_openai_batch(model_id, texts[start : start + _OPENAI_BATCH]))
    elif provider == "bedrock":
        from chatplatform import bedrock  # boto3 is imported only when a Bedrock model is used

        try:
            vectors = bedrock.embed(model_id, texts, purpose=purpose)
        except bedrock.InvokeError as exc:
            raise EmbeddingError(str(exc)) from None
    else:
        raise EmbeddingError(f"{model}: not an embedding model; use openai:<model> or bedrock:<model>")
    dimensions = {len(vector) for vector in vectors}
    if len(dimensions) != 1 or 0 in dimensions:
        raise EmbeddingError(f"{model}: the vectors differ in length or are empty")
    return vectors
