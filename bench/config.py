"""bench/config: how long configuration as code takes on a sizeable configuration.

In a throwaway test database (beside DATABASE_URL's when set, else SQLite), definitions are written
through their services (--scale 1: 100 tools, 20 knowledge bases, 100 agents, 300 tag definitions,
1,000 directives, 50 chat apps), then through the whole Django + DRF stack in-process it times:

- GET /api/chat-admin/config;
- POST /api/chat-admin/config/apply of that export: every definition unchanged (the re-apply a
  release job does when nothing moved);
- the same with dryRun;
- applying it on an empty deployment (everything created).

    .venv/bin/python bench/config.py [--scale 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatplatform.settings")
os.environ.setdefault("SECRET_KEY", "bench-secret-key-" + "x" * 40)
os.environ["CHAT_RATE_LIMITS"] = json.dumps({"chat": 10**9, "admin": 10**9, "tagdef-admin": 10**9, "tagdef-chat": 10**9})

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402


def load(scale: int) -> None:
    from agents.services import agent_upsert
    from chat.chat_apps.services import chat_app_upsert
    from directives.services import directive_upsert
    from knowledge.services import knowledge_base_upsert
    from tags.services import tag_upsert
    from tests.factories import function, tag_payload, tool_payload
    from tools.services import tool_upsert

    for i in range(100 * scale):
        tool_upsert(tool=tool_payload(toolId=f"tool-{i}@1", name=f"tool-{i}", functionSchema=[function(f"fn_{i}")]), user_id="bench")
    for i in range(20 * scale):
        knowledge_base_upsert(data={"knowledgeBaseId": f"kb-{i}", "name": f"KB {i}", "description": "Docs"}, user_id="bench")
    for i in range(100 * scale):
        agent = {
            "agentId": f"agent-{i}",
            "basePrompt": f"You are agent {i}.",
            "toolIds": [f"tool-{i}@1"],
            "knowledgeBases": [{"id": "kb-0"}],
        }
        agent_upsert(data=agent, user_id="bench")
    from tags.serializers import TagDefinitionSerializer

    for i in range(300 * scale):
        serializer = TagDefinitionSerializer(data=tag_payload(scope=f"scope-{i % 10}", tag=f"tag-{i}"))
        serializer.is_valid(raise_exception=True)
        tag_upsert(definition=dict(serializer.validated_data), user_id="bench")
    for i in range(1000 * scale):
        directive = {"scope": f"agent#agent-{i % 100}", "id": f"directive-{i}", "description": "When it applies", "instructions": "Do."}
        directive_upsert(data=directive, user_id="bench")
    for i in range(50 * scale):
        chat_app_upsert(data={"chatAppId": f"app-{i}", "title": f"App {i}", "agentId": f"agent-{i}"}, user_id="bench")


def timed(call: object) -> tuple[float, object]:
    started = time.perf_counter()
    result = call()  # type: ignore[operator]
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()

    from tests.conftest import bearer_token

    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    seconds, _ = timed(lambda: load(args.scale))
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer_token('bench-admin', admin=True)}")

    def apply(config: dict, **options: object) -> list:
        response = admin.post("/api/chat-admin/config/apply", {"config": config, **options}, format="json")
        assert response.status_code == 200, response.content[:500]
        return response.json()["changes"]

    export_seconds, response = timed(lambda: admin.get("/api/chat-admin/config"))
    config = response.json()["config"]
    count = sum(len(definitions) for definitions in config.values())
    size = len(json.dumps(config))
    print(f"config: {connection.vendor}, {count:,} definitions ({size / 1024:.0f} KB of JSON), loaded in {seconds:.1f} s")
    print(f"  export                      {export_seconds * 1000:8.0f} ms")
    unchanged_seconds, changes = timed(lambda: apply(config))
    assert {change["action"] for change in changes} == {"unchanged"}
    print(f"  apply, all unchanged        {unchanged_seconds * 1000:8.0f} ms ({unchanged_seconds / count * 1000:.2f} ms per definition)")
    dry_seconds, _ = timed(lambda: apply(config, dryRun=True, prune=True))
    print(f"  apply, dry run with prune   {dry_seconds * 1000:8.0f} ms")
    empty = {kind: [] for kind in config}
    prune_seconds, _ = timed(lambda: apply(empty, prune=True))
    print(f"  prune everything            {prune_seconds * 1000:8.0f} ms")
    create_seconds, changes = timed(lambda: apply(config))
    assert {change["action"] for change in changes} == {"create"}
    print(f"  apply on an empty database  {create_seconds * 1000:8.0f} ms ({create_seconds / count * 1000:.2f} ms per definition)")


if __name__ == "__main__":
    main()
