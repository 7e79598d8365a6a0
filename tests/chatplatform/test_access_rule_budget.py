"""An access rule's cost is bounded (docs/access-rules.md, "Budget"): a condition that would run for
minutes denies within CHAT_ACCESS_RULE_BUDGET_MS, and other users' turns go on meanwhile."""

from __future__ import annotations

import logging
import signal
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chatplatform.access import AccessRules
from tests.conftest import assert_error, bearer_token
from tests.servers import ServerProcess, asgi_server, manage, migrated_copy, sqlite_env

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

# Every item of the list compared with every other: 4 million comparisons, minutes of work.
QUADRATIC = "customData.items.map(x, customData.items.filter(y, y == x).size()).size() > 0"
ITEMS = list(range(2000))
BUDGET_MS = 100


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path) -> Iterator[ServerProcess]:
    """The platform on SQLite (one database thread: the worst case for a slow admission) with the
    demo data and a chat app whose agent carries the quadratic rule."""
    database = migrated_copy(migrated_sqlite, tmp_path_factory.mktemp("access-budget"))
    env = sqlite_env(database, CHAT_ACCESS_RULE_BUDGET_MS=str(BUDGET_MS))
    manage(env, "seed_demo")
    with asgi_server(env) as running:
        admin = {"Authorization": f"Bearer {bearer_token('budget-admin', admin=True)}"}
        agent = {
            "agentId": "guarded",
            "basePrompt": "Be brief.",
            "toolIds": [],
            "accessRules": [{"effect": "allow", "order": 1, "condition": QUADRATIC}],
        }
        app = {"chatAppId": "guarded", "title": "Guarded", "agentId": "guarded", "enabled": True}
        for path, payload in (("agent", {"agent": agent}), ("chat-app", {"chatApp": app})):
            httpx.post(f"{running.url}/api/chat-admin/{path}", json=payload, headers=admin, timeout=30).raise_for_status()
        yield running


def _turn(server: ServerProcess, user_id: str, chat_app_id: str, agent_id: str, **claims: object) -> tuple[httpx.Response, float]:
    token = bearer_token(user_id, **claims)
    body = {"chatAppId": chat_app_id, "agentId": agent_id, "message": "Hello", "features": {}, "source": "user"}
    started = time.perf_counter()
    response = httpx.post(f"{server.url}/api/chat/converse", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return response, time.perf_counter() - started


def test_a_rule_past_its_budget_denies_with_a_message_that_says_so(server):
    response, elapsed = _turn(server, "big-list-user", "guarded", "guarded", custom_data={"items": ITEMS})

    assert_error(response, 403, "INSUFFICIENT_PERMISSIONS", mentions=f"budget of {BUDGET_MS} ms")
    # The budget, plus reading the token's 2,000 items into CEL values and the turn's own work.
    assert elapsed < 3.0, f"denied after {elapsed:.1f} s"


def test_a_cheap_rule_over_a_short_list_still_allows(server):
    response, _ = _turn(server, "small-list-user", "guarded", "guarded", custom_data={"items": [1, 2, 3]})

    assert response.status_code == 200, response.text
    assert response.json()["success"] is True


def test_another_users_turn_answers_in_its_usual_time_while_the_expensive_rule_is_evaluated(server):
    usual = statistics.median(_turn(server, "bystander", "demo", "demo-assistant")[1] for _ in range(5))
    denials: list[int] = []

    def hammer() -> None:
        for _ in range(4):
            denials.append(_turn(server, "big-list-user", "guarded", "guarded", custom_data={"items": ITEMS})[0].status_code)

    attacker = threading.Thread(target=hammer)
    attacker.start()
    during = []
    try:
        while attacker.is_alive() and len(during) < 20:
            response, elapsed = _turn(server, "bystander", "demo", "demo-assistant")
            assert response.status_code == 200, response.text
            during.append(elapsed)
    finally:
        attacker.join(timeout=120)

    assert denials == [403] * 4
    assert during, "the bystander's turns ran while the rule was being evaluated"
    # Each admission may wait behind at most one evaluation's budget (and the token's conversion).
    assert statistics.median(during) < usual + 1.0, (usual, during)
    assert max(during) < usual + 2.0, (usual, during)


def test_the_log_names_the_rule_and_its_owner(settings, caplog):
    settings.CHAT_ACCESS_RULE_BUDGET_MS = 20
    rules = [{"effect": "deny", "order": 3, "condition": QUADRATIC}, {"effect": "allow", "order": 4}]
    access = AccessRules({"userId": "u1", "customData": {"items": ITEMS}})

    with caplog.at_level(logging.WARNING, logger="chatplatform.access"):
        allowed = access.allow(rules, subject="tool weather@1")

    # The rule that ran out could have denied: the later allow-all never decides.
    assert allowed is False
    assert access.over_budget == "access rule 1 (order 3) took longer than its budget of 20 ms to evaluate"
    assert "access rule 1 (order 3) of tool weather@1 denied user u1" in caplog.text
    assert "customData.items.map(x" in caplog.text


def test_two_threads_evaluating_one_rule_each_see_their_own_user():
    """cel-python's runner keeps the activation in shared places; each evaluation has its own here."""
    rules = [{"effect": "allow", "condition": 'user.userId == "alice"'}]
    wrong = []

    def decide(user_id: str) -> None:
        for _ in range(2000):
            if AccessRules({"userId": user_id, "customData": {}}).allow(rules) != (user_id == "alice"):
                wrong.append(user_id)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows within a second
    try:
        threads = [threading.Thread(target=decide, args=(user_id,)) for user_id in ("alice", "bob", "alice", "bob")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []


def test_sigterm_while_a_rule_is_evaluated_exits_within_the_drain_grace(migrated_sqlite, tmp_path):
    """docs/deploy.md, "Graceful drain": whatever a process is busy with, it exits within
    CHAT_SHUTDOWN_GRACE_SECONDS of SIGTERM, even under an operator's generous rule budget."""
    grace = 1.0
    env = sqlite_env(migrated_copy(migrated_sqlite, tmp_path), CHAT_ACCESS_RULE_BUDGET_MS="120000", CHAT_SHUTDOWN_GRACE_SECONDS=str(grace))
    manage(env, "seed_demo")
    answered: dict[str, httpx.Response] = {}
    with asgi_server(env) as running:
        admin = {"Authorization": f"Bearer {bearer_token('budget-admin', admin=True)}"}
        agent = {
            "agentId": "guarded",
            "basePrompt": "Be brief.",
            "toolIds": [],
            "accessRules": [{"effect": "allow", "order": 1, "condition": QUADRATIC}],
        }
        app = {"chatAppId": "guarded", "title": "Guarded", "agentId": "guarded", "enabled": True}
        for path, payload in (("agent", {"agent": agent}), ("chat-app", {"chatApp": app})):
            httpx.post(f"{running.url}/api/chat-admin/{path}", json=payload, headers=admin, timeout=30).raise_for_status()

        def expensive() -> None:
            try:
                answered["turn"] = _turn(running, "big-list-user", "guarded", "guarded", custom_data={"items": ITEMS})[0]
            except httpx.HTTPError:
                pass  # the connection closed with the process

        turn = threading.Thread(target=expensive)
        turn.start()
        time.sleep(2)  # evaluating by now: the rule alone takes minutes
        stopped = time.monotonic()
        running.process.send_signal(signal.SIGTERM)
        running.process.wait(timeout=180)
        took = time.monotonic() - stopped
        turn.join(timeout=10)

    assert took < grace + 2, f"the process exited {took:.1f} s after SIGTERM"
    if "turn" in answered:  # answered before the process went: refused, never allowed
        assert answered["turn"].status_code in {403, 503}, answered["turn"].text
