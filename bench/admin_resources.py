"""bench/admin_resources: search and read latency over a realistically large configuration.

With 10,000 tag definitions and 100,000 semantic directives in a throwaway database (a test
database next to DATABASE_URL's when set, else SQLite in memory), requests go through the whole
Django + DRF stack in-process (no network) and the script prints p50/p95 of:

- the chat tag search, first page, served from the tag cache vs recomputed (cache invalidated
  before each request), and their ratio (target: cached ≥ 5× faster);
- the directive search by 3 scopes (target on PostgreSQL: p95 under 20 ms, an index, not a scan:
  the query plan is printed);
- GET of one agent.

    .venv/bin/python bench/admin_resources.py [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
os.environ.setdefault("SECRET_KEY", "bench-secret-key-" + "x" * 40)
os.environ["CHAT_RATE_LIMITS"] = json.dumps({"chat": 10**9, "admin": 10**9, "tagdef-admin": 10**9, "tagdef-chat": 10**9})

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from bench.common import p50_p95_ms  # noqa: E402

TAGS = 10_000
DIRECTIVES = 100_000
SCOPES = 1_000  # 100 directives per scope


def measure(requests: int, call: Callable[[], object], before: Callable[[], object] | None = None) -> list[float]:
    samples = []
    for _ in range(requests):
        if before:
            before()
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def load() -> None:
    from agents.models import AgentDefinition
    from directives.models import ScopeType, SemanticDirective
    from tags.models import TagDefinition

    now = timezone.now()
    TagDefinition.objects.bulk_create(
        [
            TagDefinition(
                scope=f"scope-{i % 100}",
                tag=f"tag-{i}",
                usage_mode="global",
                widget={"type": "built-in", "builtInType": "chart"},
                llm_instructions_md=f"Use tag-{i} for charts.",
                status="enabled" if i % 10 else "disabled",
                rendering_contexts={"inline": {"enabled": True}},
                can_be_generated_by_llm=True,
                description=f"Tag {i}",
                created_by="bench",
                last_updated_by="bench",
            )
            for i in range(TAGS)
        ],
        batch_size=2000,
    )
    SemanticDirective.objects.bulk_create(
        [
            SemanticDirective(
                scope=f"agent#agent-{i % SCOPES}",
                scope_type=ScopeType.AGENT,
                scope_value=f"agent-{i % SCOPES}",
                directive_id=f"directive-{i}",
                description=f"When directive {i} applies.",
                instructions=f"Do thing {i}.",
                create_date=now,
                last_update=now,
                created_by=f"author-{i % 50}",
                last_updated_by="bench",
            )
            for i in range(DIRECTIVES)
        ],
        batch_size=5000,
    )
    AgentDefinition.objects.create(agent_id="bench-agent", base_prompt="Bench.", tool_ids=[], created_by="b", last_modified_by="b")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")  # fresh statistics, as a long-running database would have


def directive_plan() -> str:
    from directives.models import SemanticDirective

    scopes = ["agent#agent-1", "agent#agent-2", "agent#agent-3"]
    query = SemanticDirective.objects.filter(scope__in=scopes).order_by("-create_date", "-pk")[:101]
    return query.explain()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()

    from tags import cache as tag_cache
    from tests.conftest import bearer_token

    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        started = time.perf_counter()
        load()
        print(
            f"admin_resources: {connection.vendor}, {TAGS:,} tag definitions, {DIRECTIVES:,} directives "
            f"(loaded in {time.perf_counter() - started:.1f} s), {args.requests} requests each, in-process"
        )
        user = APIClient()
        user.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer_token('bench-user')}")
        admin = APIClient()
        admin.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer_token('bench-admin', admin=True)}")

        def tag_search() -> None:
            response = user.post("/api/chat/tagdef/search", {}, format="json")
            assert response.status_code == 200 and len(response.json()["tagDefinitions"]) == 100

        def directive_search() -> None:
            body = {"scopes": ["agent#agent-1", "agent#agent-2", "agent#agent-3"], "limit": 100}
            response = admin.post("/api/chat-admin/semantic-directive/search", body, format="json")
            assert response.status_code == 200 and len(response.json()["semanticDirectives"]) == 100

        def agent_get() -> None:
            assert admin.get("/api/chat-admin/agent/bench-agent").status_code == 200

        for warm in (tag_search, directive_search, agent_get):
            measure(10, warm)
        uncached = measure(args.requests, tag_search, before=tag_cache.invalidate)
        cached = measure(args.requests, tag_search)
        directives = measure(args.requests, directive_search)
        agents = measure(args.requests, agent_get)

        rows = [
            ("chat tag search, uncached", uncached),
            ("chat tag search, cached", cached),
            ("directive search, 3 scopes", directives),
            ("agent get", agents),
        ]
        for name, samples in rows:
            p50, p95 = p50_p95_ms(samples)
            print(f"  {name:<28} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms")
        ratio = p50_p95_ms(uncached)[0] / p50_p95_ms(cached)[0]
        print(f"  cached tag search is {ratio:.1f}x faster at p50 (target >= 5x) {'OK' if ratio >= 5 else 'BELOW TARGET'}")
        p95 = p50_p95_ms(directives)[1]
        if connection.vendor == "postgresql":
            print(f"  directive search p95 {p95:.2f} ms (target < 20 ms on PostgreSQL) {'OK' if p95 < 20 else 'ABOVE TARGET'}")
        print("  query plan of the directive search by scope:")
        for line in directive_plan().splitlines():
            print(f"    {line}")
        figures = {name: {"p50_ms": round(p50_p95_ms(s)[0], 3), "p95_ms": round(p50_p95_ms(s)[1], 3)} for name, s in rows}
        print(json.dumps({"bench": "admin_resources", "vendor": connection.vendor, "cached_ratio": round(ratio, 2), **figures}))
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
