"""schemathesis against the live OpenAPI schema: every operation's requests and answers
as the schema says, with all of schemathesis' checks, on a real server process on SQLite.

KNOWN_GAPS lists the operations whose schema and validation still disagree (schemathesis 4.32,
found when this test was written; docs/decisions.md "The OpenAPI schema and its tests").
They are left out of the run so that the rest stays checked; fixing one is removing its line. A
new operation is checked from the start.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.conftest import bearer_token
from tests.servers import ROOT, asgi_server, manage, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

KNOWN_GAPS = [
    "POST /api/chat-admin/agent",
    # Holds the definitions of the tool, agent, knowledge base and tagdef writes below, with their gaps.
    "POST /api/chat-admin/config/apply",
    "POST /api/chat-admin/knowledge-base",
    "POST /api/chat-admin/semantic-directive/deploy",
    "POST /api/chat-admin/semantic-directive/search",
    "POST /api/chat-admin/sessions/search",
    "POST /api/chat-admin/tagdef",
    "POST /api/chat-admin/tagdef/deploy",
    "POST /api/chat-admin/tagdef/search",
    "POST /api/chat-admin/tool",
    "POST /api/chat/tagdef/search",
]

# docs/api.md, "Agents" and "Knowledge bases": a record still in use (and a rollback to tools or knowledge bases gone
# since) is refused with 400 naming what holds it, though the request is well formed: accepted
# here for these operations alone.
IN_USE_IS_400 = [
    "DELETE /api/chat-admin/agent/{agentId}",
    "DELETE /api/chat-admin/knowledge-base/{knowledgeBaseId}",
    "POST /api/chat-admin/agent/{agentId}/rollback",
]
# docs/api.md, "Branches": a message id that names no message of the session (a parent, a branch's
# leaf or a version to list) is refused with 400 naming the parameter, though it is a well-formed UUID.
NOT_OF_THE_SESSION_IS_400 = [
    "POST /api/chat/converse",
    "GET /api/chat/sessions/{sessionId}/messages",
    "GET /api/chat-admin/sessions/{sessionId}/messages",
    "POST /api/chat/sessions/{sessionId}/messages/{messageId}/regenerate",
]
CONFIG = "".join(
    f'[[operations]]\ninclude-name = "{name}"\n'
    'checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]\n\n'
    for name in IN_USE_IS_400 + NOT_OF_THE_SESSION_IS_400
)

# Enough examples to meet each kind of failure at least once, few enough for about a minute.
MAX_EXAMPLES = 5
RATE_LIMITS = {"chat": 10**6, "admin": 10**6, "tagdef-admin": 10**6, "tagdef-chat": 10**6}


def test_the_api_answers_as_its_openapi_schema_says(migrated_sqlite, tmp_path):
    st = shutil.which("st", path=str(ROOT / ".venv" / "bin")) or shutil.which("st")
    assert st, "schemathesis is in requirements.txt"
    env = sqlite_env(migrated_copy(migrated_sqlite, tmp_path), CHAT_RATE_LIMITS=json.dumps(RATE_LIMITS))
    manage(env, "seed_demo")
    excluded = [argument for name in KNOWN_GAPS for argument in ("--exclude-name", name)]
    (tmp_path / "schemathesis.toml").write_text(CONFIG)  # found in the run's working directory
    with asgi_server(env) as server:
        run = subprocess.run(
            [
                st,
                "run",
                f"{server.url}/api/schema/?format=json",
                "--checks",
                "all",
                "--max-examples",
                str(MAX_EXAMPLES),
                "--phases",
                "examples,coverage,fuzzing",
                "--seed",
                "23",
                "--header",
                f"Authorization: Bearer {bearer_token('schemathesis', admin=True)}",
                *excluded,
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
