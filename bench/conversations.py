"""bench/conversations: searching one's conversations, and the session list with pins.

For each database (SQLite in a file, and PostgreSQL when DATABASE_URL or the local server at
postgres://postgres@127.0.0.1:5432/postgres answers), in a throwaway database: `--sessions`
sessions of `--messages` messages each (generated prose, bench/knowledge.py's corpus), spread
over users of `--per-user` sessions, loaded through the ORM so that the index is filled as a turn
fills it (SQLite's triggers, PostgreSQL's generated column). Then one user's search p50/p95
through the selector and through `GET /api/chat/sessions/search` (target p95 < 50 ms on both
databases), and `GET /api/chat/sessions` of that user with 5 sessions pinned.

    .venv/bin/python bench/conversations.py [--sessions 100000] [--messages 20] [--per-user 1000] [--queries 200] [--only sqlite|postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import manage, percentile, throwaway_database  # noqa: E402
from bench.knowledge import STOP_WORDS, Corpus, measure, percentiles, postgres_url  # noqa: E402

SENTENCES = 20_000  # a pool messages are drawn from: generating 2 million messages word by word takes minutes
TARGET_MS = 50
BATCH = 5_000


def load(sessions: int, messages: int, per_user: int, corpus: Corpus) -> float:
    """Sessions and messages for users u0, u1, … through bulk_create; seconds taken."""
    from django.db import transaction
    from django.utils import timezone

    from chat.sessions.models import ChatMessage, ChatSession
    from chat.users.models import ChatUser

    pool = [corpus.sentence() for _ in range(SENTENCES)]
    rng = corpus.rng
    users = (sessions + per_user - 1) // per_user
    started = time.perf_counter()
    ChatUser.objects.bulk_create([ChatUser(user_id=f"u{index}") for index in range(users)])
    now = timezone.now()
    pending_sessions: list[ChatSession] = []
    pending_messages: list[ChatMessage] = []

    def flush() -> None:
        with transaction.atomic():
            ChatSession.objects.bulk_create(pending_sessions)
            ChatMessage.objects.bulk_create(pending_messages, batch_size=BATCH)
        pending_sessions.clear()
        pending_messages.clear()

    for index in range(sessions):
        user_id = f"u{index // per_user}"
        session = ChatSession(user_id=user_id, chat_app_id="support", agent_id="helper", title=" ".join(corpus.draw(4)).capitalize())
        pending_sessions.append(session)
        parent = None  # one straight branch, as a session's turns make it
        for turn in range(messages):
            source = "user" if turn % 2 == 0 else "assistant"
            text = " ".join(rng.choices(pool, k=1 if source == "user" else rng.randint(2, 6)))
            parent = ChatMessage(session=session, user_id=user_id, source=source, message=text, timestamp=now, parent=parent)
            pending_messages.append(parent)
        if len(pending_messages) >= BATCH:
            flush()
    flush()
    return time.perf_counter() - started


def child(sessions: int, messages: int, per_user: int, query_count: int) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
    os.environ["CHAT_RATE_LIMITS"] = json.dumps({"chat": 10**9, "admin": 10**9, "tagdef-admin": 10**9, "tagdef-chat": 10**9})
    import django

    django.setup()
    from django.db import connection
    from django.utils import timezone
    from rest_framework.test import APIClient

    from chat.sessions.models import ChatMessage, ChatSession
    from chat.sessions.search import search_words, sessions_search
    from tests.conftest import bearer_token

    corpus = Corpus()
    print(f"conversations: {connection.vendor}, {sessions:,} sessions of {messages} messages, {per_user:,} per user", flush=True)
    seconds = load(sessions, messages, per_user, corpus)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # as autovacuum does after such a load
    total = sessions * messages
    print(f"  load              {total / seconds:8.0f} messages/s  ({total:,} messages in {seconds:.1f} s)", flush=True)
    figures: dict = {"vendor": connection.vendor, "sessions": sessions, "messages": total, "load_messages_per_s": round(total / seconds)}

    # Half: one content word a user remembers (ranks 20-5,000); half: two words of one of their own
    # messages, both required (found, and ranked against every message holding either).
    user_id = "u0"
    own = ChatMessage.objects.filter(session__user_id=user_id).order_by("?").values_list("message", flat=True)[: query_count // 2]
    remembered = [[word for word in re.findall(r"[a-z]+", text.lower()) if word not in STOP_WORDS] for text in own]
    queries = [corpus.rng.choice(corpus.words[20:5_000]) for _ in range(query_count - len(remembered))]
    queries += [" ".join(corpus.rng.sample(words, min(2, len(words)))) for words in remembered if words]
    corpus.rng.shuffle(queries)
    found = [len(sessions_search(user_id=user_id, words=search_words(q), limit=20)) for q in queries]
    selector = measure(queries, lambda q: sessions_search(user_id=user_id, words=search_words(q), limit=20))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer_token(user_id)}")

    def endpoint(text: str) -> None:
        response = client.get("/api/chat/sessions/search", {"q": text})
        assert response.status_code == 200, response.content

    endpoint(queries[0])  # the first request of a process (user row, caches) is not a search's cost
    endpoint_samples = measure(queries, endpoint)
    ChatSession.objects.filter(pk__in=list(ChatSession.objects.filter(user_id=user_id).values_list("pk", flat=True)[:5])).update(
        pinned_at=timezone.now()
    )

    def listed(_: str) -> None:
        response = client.get("/api/chat/sessions", {"limit": 20})
        assert response.status_code == 200 and response.json()["sessions"][0]["pinned"], response.content

    listing = measure(queries[:100], listed)
    print(f"  results per query  median {percentile(found, 50)}, {sum(1 for n in found if n == 0)} of {len(found)} found nothing")
    for name, samples, target in (
        ("search selector", selector, TARGET_MS),
        ("search endpoint", endpoint_samples, TARGET_MS),
        ("session list", listing, None),
    ):
        p50, p95 = percentiles(samples)
        figures[name.replace(" ", "_")] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "max_ms": round(max(samples) * 1000, 2)}
        verdict = f"(target p95 < {target} ms) {'OK' if p95 < target else 'ABOVE TARGET'}" if target else ""
        print(f"  {name:<17} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   max {max(samples) * 1000:7.2f} ms   {verdict}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--per-user", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [
        "--sessions",
        str(args.sessions),
        "--messages",
        str(args.messages),
        "--per-user",
        str(args.per_user),
        "--queries",
        str(args.queries),
    ]
    if args.child:
        print("FIGURES " + json.dumps(child(args.sessions, args.messages, args.per_user, args.queries)), flush=True)
        return
    targets = [] if args.only == "postgres" else [None]
    if args.only != "sqlite":
        url = postgres_url()
        if url is None:
            print("conversations: no PostgreSQL answers (DATABASE_URL or the local server): skipped")
        else:
            targets.append(url)
    results = []
    for url in targets:
        with tempfile.TemporaryDirectory() as folder, throwaway_database(url, folder) as database_url:
            env = {**os.environ, "DATABASE_URL": database_url}
            env.pop("REDIS_URL", None)
            env.setdefault("SECRET_KEY", "bench-secret-key-" + "x" * 40)
            manage(env, "migrate", "--noinput")
            process = subprocess.run(
                [sys.executable, "bench/conversations.py", "--child", *sizes],
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
    print(json.dumps({"bench": "conversations", "results": results}))


if __name__ == "__main__":
    main()
