"""Webhooks (docs/api.md, "Webhooks") through the public interfaces: events caused over
HTTP, delivered by the worker to a receiver on loopback."""

from __future__ import annotations

import signal
import time
import uuid

import pytest
from django.test import Client

from chat.webhooks.models import WebhookAttempt, WebhookDelivery
from chatplatform.models import WorkerProcess
from tests.chatplatform.test_settings import start as start_up
from tests.conftest import assert_error
from tests.events.conftest import SECRET, converse, converse_response, run_worker, wait_until, worker_process
from tests.peers.webhook_receiver import Answer, WebhookReceiver

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_new_session_is_announced_once_signed_with_a_stable_unique_id(app, webhooks, receiver, client_for):
    alice = client_for("alice")
    first = converse(alice)
    converse(alice, sessionId=first["sessionId"])  # a later turn: no new session
    second = converse(alice)

    run_worker()

    created = receiver.of("session.created")
    assert sorted(request.json["data"]["sessionId"] for request in created) == sorted([first["sessionId"], second["sessionId"]])
    for request in created:
        assert request.verify(SECRET)
        assert request.json["data"] == {"sessionId": request.json["data"]["sessionId"], "userId": "alice", "chatAppId": "support"}
        assert request.json["event"] == "session.created" and request.json["timestamp"].endswith("Z")
    assert len({request.webhook_id for request in created}) == 2


def test_feedback_from_the_chat_api_and_from_an_operator_is_announced(app, webhooks, receiver, client_for, admin_client):
    alice = client_for("alice")
    session_id = converse(alice)["sessionId"]
    by_user = alice.post("/api/chat/feedback", {"feedback": {"sessionId": session_id, "type": "user_thumbs_up"}}, format="json")
    by_operator = admin_client.post(
        "/api/chat-admin/feedback",
        {"command": "addChatSessionFeedback", "feedback": {"sessionId": session_id, "type": "training_example"}},
        format="json",
    )
    assert by_user.status_code == 200 and by_operator.status_code == 200

    run_worker()

    feedback = receiver.of("feedback.created")
    assert len(feedback) == 2 and all(request.verify(SECRET) for request in feedback)
    assert {request.json["data"]["sessionId"] for request in feedback} == {session_id}
    assert len({request.webhook_id for request in feedback}) == 2


def test_each_endpoint_gets_its_own_id_and_only_the_events_it_subscribed_to(app, settings, webhooks, client_for):
    with WebhookReceiver() as second:
        settings.CHAT_WEBHOOKS = [*settings.CHAT_WEBHOOKS, {"url": second.url, "secret": "other-secret", "events": ["feedback.created"]}]
        session_id = converse(client_for("alice"))["sessionId"]
        client_for("alice").post("/api/chat/feedback", {"feedback": {"sessionId": session_id, "type": "other"}}, format="json")

        run_worker()

        (only,) = second.received
        assert only.event == "feedback.created" and only.verify("other-secret") and not only.verify(SECRET)
    first_feedback = [request for request in WebhookDelivery.objects.filter(event="feedback.created")]
    assert len({delivery.pk for delivery in first_feedback}) == 2


def test_a_write_that_fails_leaves_no_event(app, webhooks, client_for):
    alice = client_for("alice")
    session_id = converse(alice)["sessionId"]
    feedback = {"feedbackId": "fb-1", "sessionId": session_id, "type": "other"}
    assert alice.post("/api/chat/feedback", {"feedback": feedback}, format="json").status_code == 200
    assert_error(alice.post("/api/chat/feedback", {"feedback": feedback}, format="json"), 400, mentions="feedbackId")
    assert_error(converse_response(alice, message="Hi", sessionId=str(uuid.uuid4())), 404, "INVALID_SESSION_ID")

    assert sorted(WebhookDelivery.objects.values_list("event", flat=True)) == ["feedback.created", "session.created"]


def test_a_failing_receiver_is_retried_with_backoff_under_one_id_and_every_attempt_is_recorded(app, webhooks, receiver, client_for):
    receiver.script([Answer(status=500), Answer(status=500), Answer(status=200)])
    converse(client_for("alice"))

    with worker_process(webhooks, worker_id="retrying-worker"):
        attempts = receiver.wait_for(lambda got: len(got) == 3)
        time.sleep(0.3)  # the worker records the third attempt after the answer

    assert len({request.webhook_id for request in attempts}) == 1
    assert all(request.verify(SECRET) for request in attempts)
    # Backoff: the n-th retry waits CHAT_WEBHOOK_BACKOFF_SECONDS × 2^(n-1), ±25 %.
    first_wait, second_wait = attempts[1].at - attempts[0].at, attempts[2].at - attempts[1].at
    assert first_wait >= 0.4 * 0.75 and second_wait >= 0.8 * 0.75, (first_wait, second_wait)
    delivery = WebhookDelivery.objects.get()
    assert str(delivery.pk) == attempts[0].webhook_id
    assert (delivery.state, delivery.attempts) == ("delivered", 3)
    recorded = list(delivery.attempt_log.order_by("number").values_list("number", "status_code", "error"))
    assert recorded == [(1, 500, "answered 500"), (2, 500, "answered 500"), (3, 200, "")]
    assert all(attempt.duration_ms >= 0 and attempt.response_excerpt == "ok" for attempt in delivery.attempt_log.all())


def test_a_receiver_that_keeps_failing_ends_failed_after_the_retry_window(app, settings, webhooks, receiver, client_for):
    receiver.default = Answer(status=503, body="down for maintenance")
    settings.CHAT_WEBHOOK_RETRY_HOURS = 1.5 / 3600  # 1.5 s

    with worker_process({**webhooks, "CHAT_WEBHOOK_RETRY_HOURS": str(1.5 / 3600)}, worker_id="failing-worker"):
        converse(client_for("alice"))
        wait_until(lambda: WebhookDelivery.objects.filter(state="failed").exists(), what="the delivery to fail")

    delivery = WebhookDelivery.objects.get()
    assert delivery.attempts >= 2 and delivery.last_status == 503
    assert delivery.attempt_log.count() == delivery.attempts == len(receiver.received)
    assert delivery.attempt_log.last().response_excerpt == "down for maintenance"


def test_a_receiver_that_never_answers_in_time_delays_no_turn(app, webhooks, receiver, client_for):
    receiver.default = Answer(delay=30)  # far beyond the 1 s attempt time limit
    alice = client_for("alice")
    with worker_process(webhooks, worker_id="slow-receiver-worker"):
        durations = []
        for _ in range(4):
            started = time.monotonic()
            converse(alice)
            durations.append(time.monotonic() - started)
            time.sleep(0.3)  # the worker is mid-attempt on an earlier session's event now
        wait_until(lambda: WebhookAttempt.objects.filter(error="no answer within 1 s").count() >= 4, what="timed-out attempts")

    # Each turn came back long before a delivery could: no turn waited for the receiver.
    assert max(durations) < 5, durations
    assert len(receiver.received) >= 4


def test_a_worker_killed_mid_delivery_leaves_it_to_the_next_worker_under_the_same_id(app, webhooks, receiver, client_for):
    receiver.script([Answer(delay=0.8)])  # the first attempt is in flight long enough to kill the worker
    converse(client_for("alice"))

    with worker_process(webhooks, worker_id="killed-worker") as doomed:
        receiver.wait_for(lambda got: len(got) == 1)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    assert WebhookDelivery.objects.get().state == "pending"

    with worker_process(webhooks, worker_id="second-worker"):
        wait_until(lambda: WebhookDelivery.objects.filter(state="delivered").exists(), what="the delivery")

    first, again = receiver.received
    assert first.webhook_id == again.webhook_id and again.verify(SECRET)


def test_a_worker_stopped_with_sigterm_finishes_its_delivery_first(app, webhooks, receiver, client_for):
    receiver.script([Answer(delay=0.6)])
    converse(client_for("alice"))

    with worker_process(webhooks, worker_id="stopped-worker") as worker:
        receiver.wait_for(lambda got: len(got) == 1)
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=15) == 0

    delivery = WebhookDelivery.objects.get()
    assert (delivery.state, delivery.attempts) == ("delivered", 1)
    assert not WorkerProcess.objects.filter(worker_id="stopped-worker").exists()


def test_the_admin_lists_deliveries_with_attempts_and_sends_one_again_without_showing_secrets(
    app, webhooks, receiver, client_for, admin_user
):
    receiver.script([Answer(status=500)])
    converse(client_for("alice"))
    run_worker()
    delivery = WebhookDelivery.objects.get()
    browser = Client()
    browser.force_login(admin_user)

    listing = browser.get("/admin/chat/webhookdelivery/", {"event": "session.created", "state": "pending", "endpoint": "0"})
    assert listing.status_code == 200 and str(delivery.pk) in listing.content.decode()
    assert str(delivery.pk) not in browser.get("/admin/chat/webhookdelivery/", {"state": "delivered"}).content.decode()
    page = browser.get(f"/admin/chat/webhookdelivery/{delivery.pk}/change/").content.decode()
    assert "answered 500" in page and receiver.url in page
    assert SECRET not in page and SECRET not in listing.content.decode()

    sent = browser.post("/admin/chat/webhookdelivery/", {"action": "send_again", "_selected_action": [str(delivery.pk)]}, follow=True)
    assert sent.status_code == 200 and "queued to be sent again" in sent.content.decode()
    run_worker()
    delivery.refresh_from_db()
    assert delivery.state == "delivered" and delivery.attempts == 2
    assert [request.webhook_id for request in receiver.received] == [str(delivery.pk)] * 2


@pytest.mark.parametrize(
    ("value", "mentions"),
    [
        ('{"url": "https://x.example"}', "must be a JSON list"),
        ('[{"url": "ftp://x.example", "secret": "s3cr3t-value", "events": ["session.created"]}]', "[0].url"),
        ('[{"url": "https://x.example", "events": ["session.created"]}]', "[0].secret"),
        ('[{"url": "https://x.example", "secret": "s3cr3t-value", "events": ["session.deleted"]}]', "[0].events[0]"),
        ('[{"url": "https://x.example", "secret": "s3cr3t-value", "events": []}]', "[0].events"),
        ('[{"url": "https://x.example", "secret": "s3cr3t-value", "events": ["session.created"], "retries": 3}]', "[0].retries"),
        (
            '[{"url": "https://x.example", "secret": "s3cr3t-value", "events": ["session.created"]},'
            ' {"url": "https://x.example", "secret": "s3cr3t-value", "events": ["feedback.created"]}]',
            "[1].url",
        ),
    ],
)
def test_malformed_webhooks_stop_start_up_naming_the_variable_and_never_the_secret(value, mentions):
    result = start_up({"CHAT_WEBHOOKS": value})
    assert result.returncode != 0
    assert "CHAT_WEBHOOKS" in result.stderr and mentions in result.stderr
    assert "s3cr3t-value" not in result.stderr


def test_the_worker_settings_refuse_malformed_values_naming_them():
    for variable, value in [
        ("CHAT_TASK_BACKEND", "celery"),
        ("CHAT_WORKER_POLL_SECONDS", "0"),
        ("CHAT_WEBHOOK_TIMEOUT_SECONDS", "soon"),
        ("CHAT_WEBHOOK_RETRY_HOURS", "-1"),
        ("CHAT_PERIODIC_JOBS", '{"complete_idle_sessions": 0}'),
        ("CHAT_PERIODIC_JOBS", '{"backup": 60}'),
        ("CHAT_TASK_MAX_ATTEMPTS", "0"),
    ]:
        result = start_up({variable: value})
        assert result.returncode != 0 and variable in result.stderr, (variable, value, result.stderr[-500:])
