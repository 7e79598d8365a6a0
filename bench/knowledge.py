"""bench/knowledge: knowledge base ingestion and search at 10,000 documents (about 50,000 chunks).

For each database (SQLite in a file, and PostgreSQL when DATABASE_URL or the local server at
postgres://postgres@127.0.0.1:5432/postgres answers), in a throwaway database:

- lexical: ingest a generated corpus through `knowledge.services.document_add` (the path of the
  Admin API, without HTTP): documents per second; then query latency p50/p95 through the
  selector a turn calls and through `POST /api/chat-admin/knowledge-base/{id}/query` (targets:
  p95 < 20 ms on both databases);
- semantic: the same corpus again into a base in semantic mode with CHAT_EMBEDDING_MODEL pointed
  at the scripted embeddings endpoint (tests/peers/openai_server.py in its own process,
  384-dimension vectors): documents per second, the first query (loading the vectors), then
  semantic and hybrid p50/p95 (target semantic p95 < 50 ms). Each query includes its embedding
  round trip to the endpoint. The database then holds both bases (100,000 chunks), so the
  hybrid figure includes filtering out the other base's matches.

    .venv/bin/python bench/knowledge.py [--documents 10000] [--queries 200] [--only sqlite|postgres]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import manage, p50_p95_ms, scripted_model, throwaway_database  # noqa: E402

SECTIONS = 5  # one chunk each: about 50,000 chunks for 10,000 documents
VOCABULARY = 30_000  # invented content words
SEED = 24
LOCAL_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"


# --- the corpus --------------------------------------------------------------------------------


# The commonest English words, about 45% of the words of prose; the rest is drawn from invented
# content words with the Zipf-Mandelbrot law (rank r with weight 1/(r + 100)), which fits the
# content words of real text once the function words are set apart.
_STOP_TEXT = (
    "the of and to a in is that for it as was with be by on not he this are or his from at which but have an they "
    "you were her she there been one all we their has would when if so no will can more other its into than then"
)
STOP_WORDS = _STOP_TEXT.split()
STOP_SHARE = 0.45


def vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zen", "dar", "pel", "qui", "bor", "fen", "gal", "hu"]
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    """Markdown documents of SECTIONS sections (~900 characters each) of generated prose."""

    def __init__(self) -> None:
        self.rng = random.Random(SEED)
        self.words = vocabulary(self.rng)
        self.rng.shuffle(self.words)  # rank order: words[0] is the commonest
        self.cumulative = list(itertools.accumulate(1 / (rank + 100) for rank in range(1, VOCABULARY + 1)))
        self.stop_cumulative = list(itertools.accumulate(1 / rank for rank in range(1, len(STOP_WORDS) + 1)))

    def draw(self, count: int) -> list[str]:
        words = []
        for _ in range(count):
            if self.rng.random() < STOP_SHARE:
                words.append(self.rng.choices(STOP_WORDS, cum_weights=self.stop_cumulative)[0])
            else:
                words.append(self.rng.choices(self.words, cum_weights=self.cumulative)[0])
        return words

    def sentence(self) -> str:
        return " ".join(self.draw(self.rng.randint(8, 16))).capitalize() + "."

    def document(self, index: int) -> str:
        parts = [f"# Document {index}: {' '.join(self.draw(3))}"]
        for section in range(SECTIONS):
            parts.append(f"## Section {section}: {' '.join(self.draw(3))}")
            paragraph = ""
            while len(paragraph) < 800:
                paragraph += self.sentence() + " "
            parts.append(paragraph.strip())
        return "\n\n".join(parts)

    def queries(self, count: int, documents: list[str]) -> list[str]:
        """Half: a question of 2-3 content words (ranks 20-5,000) among stop words, as a user asks;
        half: 5 consecutive words copied from a random document, as a user quotes."""
        queries = []
        for index in range(count):
            if index % 2:
                text = self.rng.choice(documents).split("\n\n")[2].split()
                start = self.rng.randrange(0, max(1, len(text) - 5))
                queries.append(" ".join(text[start : start + 5]).strip(".").lower())
            else:
                content = [self.rng.choice(self.words[20:5_000]) for _ in range(self.rng.randint(2, 3))]
                queries.append(f"what {' '.join(content[:1])} is in the {' '.join(content[1:])}")
        return queries


# --- one database (run in a child process with DATABASE_URL set) -------------------------------


def measure(queries: list[str], call: Callable[[str], object]) -> list[float]:
    samples = []
    for text in queries:
        started = time.perf_counter()
        call(text)
        samples.append(time.perf_counter() - started)
    return samples


def ingest(base_id: str, texts: list[str]) -> float:
    from knowledge.services import document_add

    started = time.perf_counter()
    for index, text in enumerate(texts):
        document = document_add(
            knowledge_base_id=base_id,
            title=f"Document {index}",
            data=text.encode(),
            mime_type="text/markdown",
            source_url=f"https://docs.example/{index}",
            user_id="bench",
        )
        assert document.status == "indexed", document.error
    return time.perf_counter() - started


def child(documents: int, query_count: int) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
    os.environ["CHAT_RATE_LIMITS"] = json.dumps({"chat": 10**9, "admin": 10**9, "tagdef-admin": 10**9, "tagdef-chat": 10**9})
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from rest_framework.test import APIClient

    from knowledge import search as knowledge_search
    from knowledge.models import Chunk
    from knowledge.selectors import search
    from knowledge.services import knowledge_base_upsert
    from tests.conftest import bearer_token

    settings.CHAT_KB_INLINE_INDEX_BYTES = 10**9  # every document inline: the measure is the indexing itself
    corpus = Corpus()
    texts = [corpus.document(index) for index in range(documents)]
    queries = corpus.queries(query_count, texts)
    figures: dict = {"vendor": connection.vendor, "documents": documents}
    print(f"knowledge: {connection.vendor}, {documents:,} documents, {query_count} queries", flush=True)

    settings.CHAT_EMBEDDING_MODEL = None
    knowledge_base_upsert(data={"knowledgeBaseId": "lexical", "name": "Lexical", "description": "Bench."}, user_id="bench")
    seconds = ingest("lexical", texts)
    chunks = Chunk.objects.filter(knowledge_base_id="lexical").count()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # fresh statistics, as a long-running database has
    figures["lexical_ingest_docs_per_s"] = round(documents / seconds, 1)
    print(f"  lexical ingest    {documents / seconds:8.1f} documents/s  ({chunks:,} chunks in {seconds:.1f} s)", flush=True)

    quoted = search(knowledge_base="lexical", query=queries[1], top_k=5)
    assert quoted and queries[1].split()[-1] in quoted[0].text.lower(), "a quoted passage must find its chunk first"
    knowledge_search.forget_word_counts()
    first = measure(queries, lambda q: search(knowledge_base="lexical", query=q, top_k=5))  # each word counted once
    second = measure(queries, lambda q: search(knowledge_base="lexical", query=q, top_k=5))
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer_token('bench-admin', admin=True)}")

    def endpoint(text: str) -> None:
        response = admin.post("/api/chat-admin/knowledge-base/lexical/query", {"query": text, "topK": 5}, format="json")
        assert response.status_code == 200, response.content

    endpoint(queries[0])  # the first request of a process (user row, caches) is not a search's cost
    endpoint_samples = measure(queries, endpoint)
    rows = (("lexical, 1st pass", first), ("lexical, 2nd pass", second), ("lexical endpoint", endpoint_samples))
    for name, samples in rows:
        p50, p95 = p50_p95_ms(samples)
        key = name.replace(",", "").replace(" ", "_")
        figures[key] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "max_ms": round(max(samples) * 1000, 2)}
        verdict = "OK" if p95 < 20 else "ABOVE TARGET"
        print(f"  {name:<17} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   max {max(samples) * 1000:7.2f} ms   (target p95 < 20 ms) {verdict}")

    settings.CHAT_EMBEDDING_MODEL = "openai:bench-embedding"
    knowledge_base_upsert(
        data={"knowledgeBaseId": "semantic", "name": "Semantic", "description": "Bench.", "retrieval": {"mode": "semantic"}},
        user_id="bench",
    )
    seconds = ingest("semantic", texts)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # as autovacuum does after such a load; stale statistics pick a scan of the whole base
    figures["semantic_ingest_docs_per_s"] = round(documents / seconds, 1)
    print(f"  semantic ingest   {documents / seconds:8.1f} documents/s  (with a 384-dimension embedding request per document)")
    knowledge_search.forget_vectors()
    started = time.perf_counter()
    search(knowledge_base="semantic", query=queries[0], top_k=5)
    figures["semantic_first_query_ms"] = round((time.perf_counter() - started) * 1000, 1)
    print(f"  semantic first query {figures['semantic_first_query_ms']:.0f} ms (loads {chunks:,} vectors into memory)")
    semantic = measure(queries, lambda q: search(knowledge_base="semantic", query=q, top_k=5))
    from knowledge.models import KnowledgeBase

    hybrid_base = KnowledgeBase.objects.get(pk="semantic")
    hybrid_base.mode = "hybrid"
    hybrid = measure(queries, lambda q: knowledge_search.run(hybrid_base, q, 5))
    embed_only = measure(queries, knowledge_search.embed_query)
    for name, samples, target in (("semantic", semantic, 50), ("hybrid", hybrid, None), ("embedding call", embed_only, None)):
        p50, p95 = p50_p95_ms(samples)
        figures[name.replace(" ", "_")] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2)}
        verdict = f"(target p95 < {target} ms) {'OK' if p95 < target else 'ABOVE TARGET'}" if target else ""
        print(f"  {name:<17} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   {verdict}")
    return figures


# --- the parent: one child per database -------------------------------------------------------


def postgres_url() -> str | None:
    import psycopg

    url = os.environ.get("DATABASE_URL") or LOCAL_POSTGRES
    if not url.startswith(("postgres://", "postgresql://")):
        url = LOCAL_POSTGRES
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error:
        return None
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("FIGURES " + json.dumps(child(args.documents, args.queries)), flush=True)
        return

    with scripted_model(["--tokens", "1"]) as base_url:
        targets = []
        if args.only != "postgres":
            targets.append(("sqlite", None))
        if args.only != "sqlite":
            url = postgres_url()
            if url is None:
                print("knowledge: no PostgreSQL answers (DATABASE_URL or the local server): skipped")
            else:
                targets.append(("postgres", url))
        results = []
        for _, url in targets:
            with tempfile.TemporaryDirectory() as folder, throwaway_database(url, folder) as database_url:
                env = {**os.environ, "DATABASE_URL": database_url, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "bench"}
                env.pop("REDIS_URL", None)
                env.setdefault("SECRET_KEY", "bench-secret-key-" + "x" * 40)
                manage(env, "migrate", "--noinput")
                process = subprocess.run(
                    [sys.executable, "bench/knowledge.py", "--child", "--documents", str(args.documents), "--queries", str(args.queries)],
                    cwd=ROOT,
                    env=env,
                    check=True,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                for line in process.stdout.splitlines():
                    if line.startswith("FIGURES "):
                        results.append(json.loads(line[len("FIGURES ") :]))
                    else:
                        print(line)
        print(json.dumps({"bench": "knowledge", "results": results}))


if __name__ == "__main__":
    main()
