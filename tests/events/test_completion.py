"""Session completion (docs/api.md, "Sessions") and the periodic jobs that run it."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
from django.test import Client

from chatplatform.models import PeriodicRun
from tests.events.conftest import converse, run_worker, wait_until, worker_process

pytestmark = pytest.mark.django_db(transaction=True)

IDLE_MINUTES = 0.005  # 0.3 s


@pytest.fixture
def quick_completion(settings, webhooks):
    """Sessions complete after 0.3 s idle; each periodic job's period is short, so each burst runs them."""
    settings.CHAT_SESSION_IDLE_MINUTES = IDLE_MINUTES
    settings.CHAT_PERIODIC_JOBS = {name: 0.05 for name in settings.CHAT_PERIODIC_JOBS}
    return webhooks


def _at(moment: float) -> datetime:
    return datetime.fromtimestamp(moment, tz=UTC)


def statuses(client):
    return {session["sessionId"]: session["status"] for session in client.get("/api/chat/sessions").json()["sessions"]}


def test_an_idle_session_completes_once_announced_and_shown(app, quick_completion, receiver, client_for):
    alice = client_for("alice")
    session_id = converse(alice)["sessionId"]
    assert statuses(alice) == {session_id: "active"}

    time.sleep(IDLE_MINUTES * 60 + 0.1)
    run_worker()
    time.sleep(0.1)
    run_worker()  # a second run of the job finds nothing more to complete

    assert statuses(alice) == {session_id: "completed"}
    (completed,) = receiver.of("session.completed")
    assert completed.json["data"] == {"sessionId": session_id, "userId": "alice", "chatAppId": "support"}


def test_a_later_turn_reopens_the_session_and_its_next_completion_is_a_new_event(app, quick_completion, receiver, client_for):
    alice = client_for("alice")
    session_id = converse(alice)["sessionId"]
    time.sleep(IDLE_MINUTES * 60 + 0.1)
    run_worker()
    assert statuses(alice) == {session_id: "completed"}

    converse(alice, sessionId=session_id)
    assert statuses(alice) == {session_id: "active"}
    time.sleep(IDLE_MINUTES * 60 + 0.1)
    run_worker()

    assert statuses(alice) == {session_id: "completed"}
    first, second = receiver.of("session.completed")
    assert first.json["data"]["sessionId"] == second.json["data"]["sessionId"] == session_id
    assert first.webhook_id != second.webhook_id


def test_a_session_with_a_recent_message_stays_active(app, quick_completion, settings, receiver, client_for):
    settings.CHAT_SESSION_IDLE_MINUTES = 5
    alice = client_for("alice")
    session_id = converse(alice)["sessionId"]
    run_worker()
    assert statuses(alice) == {session_id: "active"}
    assert receiver.of("session.completed") == []


def test_two_workers_run_each_periodic_job_once_per_period(app, settings, webhooks, receiver, client_for):
    period = 0.5
    settings.CHAT_SESSION_IDLE_MINUTES = IDLE_MINUTES
    periods = {name: period for name in settings.CHAT_PERIODIC_JOBS}
    env = {**webhooks, "CHAT_SESSION_IDLE_MINUTES": str(IDLE_MINUTES), "CHAT_PERIODIC_JOBS": json.dumps(periods)}
    alice = client_for("alice")
    sessions = {converse(alice)["sessionId"] for _ in range(3)}

    with worker_process(env, worker_id="worker-one"), worker_process(env, worker_id="worker-two"):
        started = time.time()
        wait_until(lambda: len(receiver.of("session.completed")) == 3, what="three completions")
        time.sleep(6 * period)  # both workers keep ticking over several more periods
        ended = time.time()

    assert {request.json["data"]["sessionId"] for request in receiver.of("session.completed")} == sessions
    assert len(receiver.of("session.completed")) == 3  # once per completion, though two workers ran the job
    for job in periods:
        runs = PeriodicRun.objects.filter(job=job, period_start__gte=_at(started + period), period_start__lte=_at(ended - 2 * period))
        numbers = sorted(runs.values_list("period", flat=True))
        assert len(numbers) >= 3, job
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))), (job, numbers)  # every period, none twice
        assert set(runs.values_list("runs", flat=True)) == {1}, job
    assert set(PeriodicRun.objects.values_list("claimed_by", flat=True)) <= {"worker-one", "worker-two"}


def test_the_admin_shows_the_status_and_filters_by_it(app, quick_completion, client_for, admin_user):
    alice = client_for("alice")
    idle = converse(alice)["sessionId"]
    time.sleep(IDLE_MINUTES * 60 + 0.1)
    run_worker()
    fresh = converse(alice)["sessionId"]
    browser = Client()
    browser.force_login(admin_user)

    completed_page = browser.get("/admin/chat/chatsession/", {"status__exact": "completed"}).content.decode()
    active_page = browser.get("/admin/chat/chatsession/", {"status__exact": "active"}).content.decode()
    assert idle in completed_page and fresh not in completed_page
    assert fresh in active_page and idle not in active_page
