"""Searching a knowledge base (docs/api.md, "Knowledge bases"): lexical, semantic, hybrid; or the provider's index.

- Lexical: SQLite FTS5 ranked by BM25, or PostgreSQL full-text search ranked by `ts_rank_cd`
  (the index is made by migration 0001). The query's words are OR-ed, so a question matches the
  chunks that hold any of its words, the rarer and denser first. No model, no network.
- Semantic: the query's embedding against the chunks' stored vectors, exactly (cosine, NumPy).
  A process keeps each knowledge base's matrix in memory until its `index_version` changes; with
  the pgvector extension and column present (`manage.py knowledge_pgvector`), PostgreSQL ranks
  instead and nothing is held in memory.
- Hybrid: reciprocal rank fusion of the two rankings (RRF_K = 60, as in Cormack et al. 2009).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from django.conf import settings
from django.db import connection

from chatplatform import embeddings
from knowledge.models import Chunk, KnowledgeBase, Mode, Source

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

RRF_K = 60
_MAX_QUERY_TERMS = 32
_VECTOR_CACHE_BASES = 8  # knowledge bases whose matrices a process keeps (least recently used dropped)


class SearchError(Exception):
    """The search could not run (the embedding model or the provider failed); the message says why."""


@dataclass(frozen=True, slots=True)
class Result:
    """One chunk found, with what a citation needs. `score` is the ranking's own: BM25 or
    ts_rank_cd (lexical), cosine (semantic), RRF (hybrid), the provider's (bedrock)."""

    knowledge_base_id: str
    document_id: str
    title: str
    source_url: str | None
    chunk_id: str
    text: str
    score: float
    heading: str = ""
    page: int | None = None
    start: int | None = None
    end: int | None = None

    def as_wire(self) -> dict[str, Any]:
        """The result as the query endpoint answers it (docs/api.md, "Knowledge bases")."""
        return {
            "documentId": self.document_id,
            "title": self.title,
            "sourceUrl": self.source_url,
            "chunkId": self.chunk_id,
            "text": self.text,
            "score": self.score,
        }


def chunk_id(document_id: UUID | str, ordinal: int) -> str:
    return f"{document_id}:{ordinal}"


def default_mode() -> str:
    """The mode of a new base (docs/api.md, "Knowledge bases"): hybrid when an embedding model is configured, else lexical."""
    return Mode.HYBRID if settings.CHAT_EMBEDDING_MODEL else Mode.LEXICAL


def effective_mode(knowledge_base: KnowledgeBase) -> str:
    """The base's mode, lexical when it needs an embedding model and none is configured (any more)."""
    return knowledge_base.mode if settings.CHAT_EMBEDDING_MODEL else Mode.LEXICAL


# --- lexical -----------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
# A word in more than this share of a base's chunks (and more than _FREQUENT_MIN of them) is a
# stop word of that base: it still counts in PostgreSQL's ranking, but no longer selects
# candidates, which would otherwise be most of the base, each ranked (bench/knowledge.py,
# docs/decisions.md).
_FREQUENT_SHARE = 0.05
_FREQUENT_MIN = 500
_COUNTS_SECONDS = 60.0  # how long a process trusts a word's chunk count
_counts: dict[tuple[str, str, str], tuple[float, int]] = {}
_counts_lock = threading.Lock()


def forget_word_counts() -> None:
    with _counts_lock:
        _counts.clear()


def _cached(base: str, keys: list[str], now: float) -> dict[str, int]:
    with _counts_lock:
        return {key: hit[1] for key in keys if (hit := _counts.get((connection.alias, base, key))) and hit[0] > now}


def _remember(base: str, values: dict[str, int], now: float) -> None:
    with _counts_lock:
        if len(_counts) > 100_000:
            _counts.clear()
        for key, value in values.items():
            _counts[(connection.alias, base, key)] = (now + _COUNTS_SECONDS, value)


def _chunk_counts(knowledge_base_id: str, words: list[str]) -> tuple[dict[str, int], int]:
    """How many of the base's chunks hold each word, counted up to the stop-word limit + 1 (a
    walk through a stop word's whole posting list would cost more than the search); and the
    limit. Both are remembered by the process for a minute."""
    now = time.monotonic()
    total = _cached(knowledge_base_id, [""], now).get("")
    if total is None:
        total = Chunk.objects.filter(knowledge_base_id=knowledge_base_id).count()
        _remember(knowledge_base_id, {"": total}, now)
    limit = int(max(_FREQUENT_MIN, total * _FREQUENT_SHARE))
    known = _cached(knowledge_base_id, words, now)
    missing = [word for word in words if word not in known]
    if missing:
        if connection.vendor == "postgresql":
            count = (
                "(SELECT count(*) FROM (SELECT 1 FROM knowledge_chunk "
                "WHERE search @@ plainto_tsquery('english', %s) AND knowledge_base_id = %s LIMIT %s) w)"
            )
        else:
            count = (
                "(SELECT count(*) FROM (SELECT 1 FROM knowledge_chunk_fts CROSS JOIN knowledge_chunk c ON c.id = knowledge_chunk_fts.rowid "
                "WHERE knowledge_chunk_fts MATCH %s AND c.knowledge_base_id = %s LIMIT %s))"
            )
        term = (lambda word: word) if connection.vendor == "postgresql" else (lambda word: f'"{word}"')
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT " + ", ".join([count] * len(missing)),
                [value for word in missing for value in (term(word), knowledge_base_id, limit + 1)],
            )
            fresh = dict(zip(missing, (int(value) for value in cursor.fetchone()), strict=True))
        _remember(knowledge_base_id, fresh, now)
        known.update(fresh)
    return known, limit


def _selective(knowledge_base_id: str, words: list[str]) -> tuple[list[str], bool]:
    """The words that select candidates: all but the base's stop words (see above); when every
    word is one, the rarest by the capped counts. And whether any word was selective (only then
    is the phrase worth matching: a phrase of stop words costs a walk through most of the index)."""
    counts, limit = _chunk_counts(knowledge_base_id, words)
    # A count may be a minute old: a word counted 0 is kept, it may have been indexed since.
    selective = [word for word in words if counts[word] <= limit]
    if not selective:
        return [min(words, key=lambda word: counts[word])], False
    return selective, True


def _lexical(knowledge_base_id: str, query: str, limit: int) -> list[tuple[int, float]]:
    """(chunk id, score) best first. Any selective word of the query matches; the query's words
    found as one phrase match too and count once more, so a quoted passage ranks its document first."""
    spoken = _WORD.findall(query.lower())[:_MAX_QUERY_TERMS]
    words = list(dict.fromkeys(spoken))
    if not words:
        return []
    selective, with_phrase = _selective(knowledge_base_id, words)
    phrase = " ".join(spoken) if with_phrase and len(spoken) > 1 else ""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # plainto_tsquery stems and drops stop words; its & become | so that any word matches.
            # ts_rank_cd normalised by length and into [0, 1) (1|32), plus 1 when the phrase is there.
            cursor.execute(
                "SELECT c.id, ts_rank_cd(c.search, q.any_word, 33) + (c.search @@ q.phrase)::int AS score "
                "FROM knowledge_chunk c, (SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS any_word, "
                "replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS selective, "
                "phraseto_tsquery('english', %s) AS phrase) q "
                "WHERE c.knowledge_base_id = %s AND c.search @@ (q.selective || q.phrase) ORDER BY score DESC, c.id LIMIT %s",
                [" ".join(words), " ".join(selective), phrase, knowledge_base_id, limit],
            )
        else:
            # Each word quoted (FTS5 syntax characters are data then) and OR-ed; bm25 is lower-is-better.
            # CROSS JOIN keeps the full-text match the outer loop (SQLite may otherwise scan the base's chunks).
            terms = [f'"{word}"' for word in selective]
            if phrase:
                terms.insert(0, f'"{phrase}"')
            cursor.execute(
                "SELECT c.id, -bm25(knowledge_chunk_fts, 2.0, 1.0) AS score "
                "FROM knowledge_chunk_fts CROSS JOIN knowledge_chunk c ON c.id = knowledge_chunk_fts.rowid "
                "WHERE knowledge_chunk_fts MATCH %s AND c.knowledge_base_id = %s ORDER BY score DESC, c.id LIMIT %s",
                [" OR ".join(terms), knowledge_base_id, limit],
            )
        return [(row[0], float(row[1])) for row in cursor.fetchall()]


# --- vectors -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Matrix:
    version: UUID
    model: str
    ids: np.ndarray  # chunk ids, int64
    unit: np.ndarray  # one L2-normalised row per chunk, float32


_matrices: OrderedDict[str, _Matrix] = OrderedDict()
_matrices_lock = threading.Lock()


def forget_vectors() -> None:
    """Drop every cached matrix (tests; an operator never needs to: versions invalidate them)."""
    with _matrices_lock:
        _matrices.clear()


def normalised(vectors: np.ndarray) -> np.ndarray:
    import numpy as np  # at first use: not when Django starts

    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def _matrix(knowledge_base: KnowledgeBase, model: str) -> _Matrix:
    import numpy as np  # at first use: not when Django starts

    key = f"{connection.alias}:{knowledge_base.pk}"
    with _matrices_lock:
        cached = _matrices.get(key)
        if cached is not None and cached.version == knowledge_base.index_version and cached.model == model:
            _matrices.move_to_end(key)
            return cached
    rows = Chunk.objects.filter(knowledge_base_id=knowledge_base.pk, document__embedding_model=model, embedding__isnull=False).values_list(
        "id", "embedding"
    )
    ids, blobs = [], []
    for chunk_pk, blob in rows.iterator(chunk_size=2000):
        assert blob is not None  # embedding__isnull=False
        ids.append(chunk_pk)
        blobs.append(bytes(blob))
    if blobs and len({len(blob) for blob in blobs}) == 1:
        unit = normalised(np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1))
    else:
        if blobs:
            logger.warning("knowledge base %s holds vectors of several lengths from %s; re-index it", knowledge_base.pk, model)
        ids, unit = [], np.zeros((0, 0), dtype=np.float32)
    matrix = _Matrix(knowledge_base.index_version, model, np.asarray(ids, dtype=np.int64), unit)
    with _matrices_lock:
        _matrices[key] = matrix
        _matrices.move_to_end(key)
        while len(_matrices) > _VECTOR_CACHE_BASES:
            _matrices.popitem(last=False)
    return matrix


def embed_query(query: str) -> np.ndarray:
    """The query's unit vector from CHAT_EMBEDDING_MODEL; SearchError when the model fails."""
    import numpy as np  # at first use: not when Django starts

    model = settings.CHAT_EMBEDDING_MODEL
    assert model is not None  # without one, the mode in force is lexical
    try:
        (vector,) = embeddings.embed([query], model=model, purpose="query")
    except embeddings.EmbeddingError as exc:
        raise SearchError(str(exc)) from None
    return normalised(np.asarray(vector, dtype=np.float32))


def _semantic(knowledge_base: KnowledgeBase, query_vector: np.ndarray, limit: int) -> list[tuple[int, float]]:
    import numpy as np  # at first use: not when Django starts

    from knowledge import pgvector

    model = settings.CHAT_EMBEDDING_MODEL
    assert model is not None  # without one, the mode in force is lexical
    if pgvector.enabled():
        return pgvector.nearest(knowledge_base.pk, model, query_vector, limit)
    matrix = _matrix(knowledge_base, model)
    if not len(matrix.ids) or matrix.unit.shape[1] != query_vector.shape[0]:
        return []
    scores = matrix.unit @ query_vector
    count = min(limit, len(scores))
    top = np.argpartition(-scores, count - 1)[:count]
    top = top[np.lexsort((matrix.ids[top], -scores[top]))]  # best first; ties by chunk id, as the lexical rankings
    return [(int(matrix.ids[i]), float(scores[i])) for i in top]


def fuse(*rankings: list[tuple[int, float]], limit: int) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each id scores Σ 1 / (RRF_K + rank), rank counted from 1."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, (item, _) in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]


# --- results -----------------------------------------------------------------------------------


def _results(knowledge_base_id: str, ranked: list[tuple[int, float]]) -> list[Result]:
    chunks = {
        chunk.pk: chunk
        for chunk in Chunk.objects.filter(pk__in=[pk for pk, _ in ranked])
        .select_related("document")
        .only("ordinal", "heading", "text", "start", "end", "page", "document__document_id", "document__title", "document__source_url")
    }
    results = []
    for pk, score in ranked:
        chunk = chunks.get(pk)
        if chunk is None:
            continue  # deleted between the ranking and this read
        document = chunk.document
        results.append(
            Result(
                knowledge_base_id=knowledge_base_id,
                document_id=str(document.document_id),
                title=document.title,
                source_url=document.source_url,
                chunk_id=chunk_id(document.document_id, chunk.ordinal),
                text=chunk.text,
                score=score,
                heading=chunk.heading,
                page=chunk.page,
                start=chunk.start,
                end=chunk.end,
            )
        )
    return results


def _bedrock(knowledge_base: KnowledgeBase, query: str, top_k: int) -> list[Result]:
    from chatplatform import bedrock

    try:
        found = bedrock.retrieve(knowledge_base.external_id or "", query, top_k=top_k)
    except bedrock.RetrieveError as exc:
        raise SearchError(str(exc)) from None
    return [
        Result(
            knowledge_base_id=knowledge_base.pk,
            document_id=item.location,
            title=item.location.rstrip("/").rsplit("/", 1)[-1] or knowledge_base.name,
            source_url=item.location or None,
            chunk_id=item.chunk_id,
            text=item.text,
            score=item.score,
        )
        for item in found
    ]


def run(knowledge_base: KnowledgeBase, query: str, top_k: int, *, query_vector: np.ndarray | None = None) -> list[Result]:
    """The `top_k` best chunks for `query`, best first, by the base's mode (see the module)."""
    if knowledge_base.source == Source.BEDROCK:
        return _bedrock(knowledge_base, query, top_k)
    mode = effective_mode(knowledge_base)
    if mode == Mode.LEXICAL:
        return _results(knowledge_base.pk, _lexical(knowledge_base.pk, query, top_k))
    vector = query_vector if query_vector is not None else embed_query(query)
    if mode == Mode.SEMANTIC:
        return _results(knowledge_base.pk, _semantic(knowledge_base, vector, top_k))
    depth = max(4 * top_k, 20)  # candidates from each ranking, so fusion can promote a chunk both find
    ranked = fuse(_lexical(knowledge_base.pk, query, depth), _semantic(knowledge_base, vector, depth), limit=top_k)
    return _results(knowledge_base.pk, ranked)
