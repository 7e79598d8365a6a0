"""Optional pgvector support: PostgreSQL ranks the vectors when its `vector` extension is installed
and `manage.py knowledge_pgvector --dimensions N` has added the column; otherwise knowledge.search
ranks them exactly with NumPy. Detected once per process, when its first database connection
opens, and logged.

Not exercised by the test suite on a server without the extension (this project's CI server has
none); README "Knowledge bases" says how to enable it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import connection
from django.db.backends.signals import connection_created

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

COLUMN = "embedding_vector"
_state: dict[str, bool] = {}


def _detect(sender: Any, connection: Any, **kwargs: Any) -> None:
    if connection.alias in _state:
        return
    available = False
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') AND EXISTS (SELECT 1 FROM "
                "information_schema.columns WHERE table_schema = current_schema() AND table_name = 'knowledge_chunk' AND column_name = %s)",
                [COLUMN],
            )
            available = bool(cursor.fetchone()[0])
        logger.info("knowledge: vector search %s", "by pgvector" if available else "exact in process (NumPy); pgvector not enabled")
    _state[connection.alias] = available


connection_created.connect(_detect, dispatch_uid="knowledge.pgvector.detect")


def enabled() -> bool:
    if connection.alias not in _state:
        connection.ensure_connection()
        if connection.alias not in _state:  # a connection opened before this module was imported
            _detect(None, connection)
    return _state[connection.alias]


def forget() -> None:
    """Detect again at the next connection (after `knowledge_pgvector`, and in tests)."""
    _state.clear()


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{value:.7g}" for value in vector.tolist()) + "]"


def store(rows: list[tuple[int, np.ndarray]]) -> None:
    """Copy freshly inserted chunks' vectors into the pgvector column (inside the indexing transaction)."""
    if rows and enabled():
        with connection.cursor() as cursor:
            cursor.executemany(f"UPDATE knowledge_chunk SET {COLUMN} = %s::vector WHERE id = %s", [(_literal(v), pk) for pk, v in rows])


def nearest(knowledge_base_id: str, model: str, query_vector: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) best first, ranked by PostgreSQL."""
    literal = _literal(query_vector)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.id, 1 - (c.{COLUMN} <=> %s::vector) FROM knowledge_chunk c JOIN knowledge_document d ON d.id = c.document_id "
            f"WHERE c.knowledge_base_id = %s AND d.embedding_model = %s AND c.{COLUMN} IS NOT NULL "
            f"ORDER BY c.{COLUMN} <=> %s::vector, c.id LIMIT %s",
            [literal, knowledge_base_id, model, literal, limit],
        )
        return [(row[0], float(row[1])) for row in cursor.fetchall()]


def enable(dimensions: int, *, hnsw: bool) -> int:
    """Create the extension, the column (vector(dimensions)) and optionally an HNSW index, and copy
    the stored vectors of that length into it. The number of chunks copied."""
    import numpy as np  # at first use: not when Django starts

    with connection.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cursor.execute(f"ALTER TABLE knowledge_chunk ADD COLUMN IF NOT EXISTS {COLUMN} vector({int(dimensions)})")
        if hnsw:
            # Approximate: faster than the exact scan on very large bases, may miss a neighbour.
            cursor.execute(f"CREATE INDEX IF NOT EXISTS knowledge_chunk_hnsw ON knowledge_chunk USING hnsw ({COLUMN} vector_cosine_ops)")
        cursor.execute(f"SELECT id, embedding FROM knowledge_chunk WHERE embedding IS NOT NULL AND {COLUMN} IS NULL")
        rows = [(pk, np.frombuffer(bytes(blob), dtype=np.float32)) for pk, blob in cursor.fetchall()]
    rows = [(pk, vector) for pk, vector in rows if vector.shape[0] == dimensions]
    forget()
    _state[connection.alias] = True
    store(rows)
    return len(rows)
