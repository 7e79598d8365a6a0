"""`seed_demo` (README "Two commands"): the demo data set, loadable twice, visible through the APIs;
its accounts with their printed passwords only with DEBUG on (`make run`), random ones when asked
for outside DEBUG."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from chat.users.models import ChatUser

pytestmark = pytest.mark.django_db


def seed(*args: str) -> str:
    out = StringIO()
    call_command("seed_demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def debug(settings):
    """`make run`'s DEBUG (the test run's is off)."""
    settings.DEBUG = True


def test_demo_data_is_served_by_the_apis_and_reloading_changes_nothing(debug, user_client, admin_client):
    assert "login admin / admin-demo" in seed()
    agent_version = admin_client.get("/api/chat-admin/agent/demo-assistant").json()["agent"]["version"]
    assert "password unchanged" in seed()

    assert [app["chatAppId"] for app in user_client.get("/api/chat/chat-apps").json()["chatApps"]] == ["demo"]
    agent = admin_client.get("/api/chat-admin/agent/demo-assistant").json()["agent"]
    assert agent["version"] == agent_version
    assert agent["foundationModel"] == "offline"
    tools = admin_client.post("/api/chat-admin/tools/search", {"toolIds": agent["toolIds"]}, format="json").json()["tools"]
    assert {tool["executionType"] for tool in tools} == {"function", "inline"}
    tags = user_client.post("/api/chat/tagdef/search", {}, format="json").json()["tagDefinitions"]
    assert {tag["tag"] for tag in tags} == {"chart", "weather-card", "suggestion", "counter", "tips", "welcome"}
    directives = admin_client.post("/api/chat-admin/semantic-directive/search", {}, format="json").json()["semanticDirectives"]
    assert len(directives) == 3


def test_demo_admin_logs_in_to_the_django_admin(debug, client):
    seed()
    assert client.login(username="admin", password="admin-demo")
    assert client.get("/admin/agents/agentdefinition/").status_code == 200


def test_demo_knowledge_base_holds_the_projects_docs_and_answers_questions_about_the_platform(admin_client):
    seed()
    agent = admin_client.get("/api/chat-admin/agent/demo-assistant").json()["agent"]
    assert agent["knowledgeBases"] == [{"id": "platform-docs"}]
    documents = admin_client.get("/api/chat-admin/knowledge-base/platform-docs/documents").json()["documents"]
    assert {"README.md", "docs/api.md", "docs/decisions.md"} <= {document["sourceUrl"] for document in documents}
    assert {document["status"] for document in documents} == {"indexed"}
    seed()  # a re-run replaces the documents, it does not add copies
    again = admin_client.get("/api/chat-admin/knowledge-base/platform-docs/documents").json()["documents"]
    assert sorted(d["sourceUrl"] for d in again) == sorted(d["sourceUrl"] for d in documents)
    body = {"query": "how do I get a bearer token with issue_token"}
    results = admin_client.post("/api/chat-admin/knowledge-base/platform-docs/query", body, format="json").json()["results"]
    assert any(result["sourceUrl"] == "README.md" and "issue_token" in result["text"] for result in results[:3])


def test_demo_supervisor_lists_two_collaborators_that_exist(admin_client):
    seed()
    supervisor = admin_client.get("/api/chat-admin/agent/demo-supervisor").json()["agent"]
    assert supervisor["agentCollaboration"] == "SUPERVISOR"
    ids = [collaborator["agentId"] for collaborator in supervisor["collaborators"]]
    assert ids == ["demo-researcher", "demo-writer"]
    for agent_id in ids:
        assert admin_client.get(f"/api/chat-admin/agent/{agent_id}").json()["agent"]["foundationModel"] == "offline"


def test_seed_demo_keeps_an_operators_change_to_the_demo_agent_and_reset_restores_it(admin_client):
    seed()
    agent = admin_client.get("/api/chat-admin/agent/demo-assistant").json()["agent"]
    changed = {**agent, "foundationModel": "openai:llama3.1:8b", "toolIds": ["current-time@1"]}
    response = admin_client.post("/api/chat-admin/agent", {"agent": changed, "userId": "admin-user"}, format="json")
    assert response.status_code == 200, response.json()

    out = seed()
    kept = admin_client.get("/api/chat-admin/agent/demo-assistant").json()["agent"]
    assert kept["foundationModel"] == "openai:llama3.1:8b"
    assert kept["toolIds"] == ["current-time@1"]
    assert "kept as they are" in out

    out = StringIO()
    call_command("seed_demo", "--reset", stdout=out)
    restored = admin_client.get("/api/chat-admin/agent/demo-assistant").json()["agent"]
    assert restored["foundationModel"] == "offline"
    assert restored["toolIds"] == ["current-time@1", "word-count@1"]
    assert "restored" in out.getvalue()


def test_seed_demo_recreates_a_deleted_demo_tool_and_leaves_the_others(admin_client):
    seed()
    tool = admin_client.get("/api/chat-admin/tool/word-count@1").json()["tool"]
    edited = {**tool, "description": "Counts words, as the operator wrote it."}
    assert admin_client.post("/api/chat-admin/tool", {"tool": edited, "userId": "admin-user"}, format="json").status_code == 200
    assert admin_client.delete("/api/chat-admin/tool/current-time@1").status_code == 200

    seed()
    assert admin_client.get("/api/chat-admin/tool/current-time@1").status_code == 200
    assert admin_client.get("/api/chat-admin/tool/word-count@1").json()["tool"]["description"] == "Counts words, as the operator wrote it."


def test_seed_demo_prints_the_servers_address_it_is_given():
    out = StringIO()
    call_command("seed_demo", "--url", "http://127.0.0.1:8100", stdout=out)
    assert "http://127.0.0.1:8100/admin/" in out.getvalue()
    assert ":8000" not in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_seed_demo_migrate_applies_what_is_unapplied_and_nothing_otherwise():
    call_command("migrate", "chatplatform", "0001", verbosity=0)  # one migration of ours unapplied
    out = StringIO()
    call_command("seed_demo", "--migrate", stdout=out)
    assert "Applying chatplatform.0002" in out.getvalue()

    again = StringIO()
    call_command("seed_demo", "--migrate", stdout=again)
    assert "Applying" not in again.getvalue()
    assert "Operations to perform" not in again.getvalue(), "migrate did not run at all"


def test_outside_debug_no_demo_account_is_created():
    out = seed()
    assert not ChatUser.objects.filter(user_id__in=["admin", "demo"]).exists()
    assert "admin-demo" not in out and "demo-chat" not in out
    assert "no demo account outside DEBUG" in out
    assert "Demo data: chat app 'demo'" in out, "the demo's records are loaded all the same"


def test_outside_debug_with_accounts_each_gets_a_random_password_printed_once(client):
    out = seed("--with-accounts")
    passwords = dict(re.findall(r"login (admin|demo) / (\S+)", out))
    assert set(passwords) == {"admin", "demo"}
    assert passwords["admin"] != "admin-demo" and passwords["demo"] != "demo-chat"
    assert passwords["admin"] != passwords["demo"] and len(passwords["admin"]) >= 16
    assert client.login(username="admin", password=passwords["admin"])
    again = seed("--with-accounts")
    assert "login admin (password unchanged)" in again
    assert passwords["admin"] not in again


def test_seed_demo_keeps_an_operators_change_to_a_demo_directive(admin_client):
    seed()
    edited = {"scopeType": "agent", "scopeValue": "demo-assistant", "id": "metric-units", "description": "Units.", "instructions": "SI."}
    response = admin_client.post("/api/chat-admin/semantic-directive", {"semanticDirective": edited}, format="json")
    assert response.status_code == 200, response.json()

    seed()
    search = {"includeInstructions": True}
    directives = admin_client.post("/api/chat-admin/semantic-directive/search", search, format="json").json()["semanticDirectives"]
    assert next(d for d in directives if d["id"] == "metric-units")["instructions"] == "SI."
