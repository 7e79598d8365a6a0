"""Start-up (docs/decisions.md, "Settings and start-up"): heavy libraries are imported where they are first used, not when Django
starts. Structural, not timed: a fresh process sets Django up, loads the URL configuration (as
`manage.py check` and the server do) and the admin, then lists what it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.servers import ROOT

# The model SDKs, the JavaScript engine, AWS, MCP, numerical and document libraries, the template
# engine, CEL, Daphne/Twisted (runserver only), HTTP clients of single features. (jsonschema is
# loaded: the site-wide features are checked against their schema at start-up, chat/apps.py.)
HEAVY = [
    "redis",  # only with REDIS_URL
    "psycopg",  # only on PostgreSQL
    "requests",  # DRF's compat would (chatplatform.drf)
    "pydantic_ai",
    "pydantic",
    "openai",
    "anthropic",
    "quickjs",
    "boto3",
    "botocore",
    "mcp",
    "numpy",
    "pypdf",
    "pybars",
    "celpy",
    "twisted",
    "daphne",
    "httpx",
    "markdown_it",
    "rq",
]

PROBE = """
import json, sys
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
from django.contrib import admin
admin.site.get_urls()
print(json.dumps(sorted(sys.modules)))
"""


def test_starting_django_imports_none_of_the_heavy_libraries():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "chatplatform.settings", "SECRET_KEY": "k" * 50}
    for embedded in ("DATABASE_URL", "REDIS_URL", "CHAT_TASK_BACKEND"):
        env.pop(embedded, None)
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))
    assert sorted(name for name in HEAVY if name in loaded) == []


SETUP_ONLY = """
import json, sys
import django
django.setup()
print(json.dumps(sorted(sys.modules)))
"""


def test_a_command_that_reads_no_urls_loads_no_turn_machinery():
    """`issue_token` and the like only set Django up: the apps' signals name the turn package, but
    its admission, prompt compiler and model clients load at a turn (or a server's warm start)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "chatplatform.settings", "SECRET_KEY": "k" * 50}
    for embedded in ("DATABASE_URL", "REDIS_URL", "CHAT_TASK_BACKEND"):
        env.pop(embedded, None)
    result = subprocess.run([sys.executable, "-c", SETUP_ONLY], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))
    assert sorted(name for name in ("chat.turn.admission", "chat.turn.prompt", "chat.turn.run", "chatplatform.llm") if name in loaded) == []
