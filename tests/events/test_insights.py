"""Session insights (docs/api.md, "Session insights"): the scripted model's analysis stored, its automatic feedback,
failures recorded; `GET`/`POST /api/chat-admin/sessions/{sessionId}/insights`."""

from __future__ import annotations

import copy
import json
import signal
import time
import uuid

import pytest
from django.test import Client

from chat.chat_apps.models import ChatApp
from chat.insights import analysis as insights
from tests.conftest import assert_error
from tests.events.conftest import converse, run_worker, wait_until, worker_process
from tests.peers.openai_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "openai:test-model"
IDLE_MINUTES = 0.005

SCORING = {
    "scores": {
        "goalAchievement": {"score": 3, "description": "The user did not get a refund."},
        "userSatisfaction": {"score": 2.5, "description": "Frustrated."},
        "aiPerformance": {
            "accuracy": {"score": 7, "description": "Correct policy."},
            "helpfulness": {"score": 4, "description": "No way forward offered."},
            "communication": {"score": 8, "description": "Clear."},
            "efficiency": {"score": 6, "description": "Two turns."},
            "overall": {"score": 5, "description": "Adequate."},
        },
        "interactionQuality": {"score": 5, "description": "Polite but unproductive."},
    },
    "assessments": {
        "userSentiment": "negative",
        "goalCompletionStatus": "not_completed",
        "satisfactionLevel": "dissatisfied",
        "requiresFollowup": True,
        "criticalIssuesPresent": False,
        "escalationNeeded": False,
    },
    "metrics": {"sessionDurationEstimate": "short", "complexityLevel": "high", "userEffortRequired": "medium", "aiConfidenceLevel": "low"},
}
REPORT = "## Goal\nA refund.\n\n## What went wrong\nNo escalation path was offered."


def analysis(scoring=SCORING, report=REPORT):
    return Reply(text=f"<json>{json.dumps(scoring)}</json>\n\n{report}", prompt_tokens=420, completion_tokens=180)


@pytest.fixture
def analysed_app(app, settings, webhooks, openai_server):
    """The `support` app with sessionInsights on, CHAT_INSIGHTS_MODEL on the scripted server, quick completion."""
    ChatApp.objects.filter(pk="support").update(features={"sessionInsights": {"enabled": True}})
    settings.CHAT_INSIGHTS_MODEL = MODEL
    settings.CHAT_SESSION_IDLE_MINUTES = IDLE_MINUTES
    # Every job an hour apart (a job without a period stops the worker), but the two under test.
    settings.CHAT_PERIODIC_JOBS = {
        **dict.fromkeys(settings.CHAT_PERIODIC_JOBS, 3600.0),
        "complete_idle_sessions": 0.2,
        "recover_stalled_work": 1.0,
    }
    periods = json.dumps(settings.CHAT_PERIODIC_JOBS)
    return {**webhooks, "CHAT_INSIGHTS_MODEL": MODEL, "CHAT_SESSION_IDLE_MINUTES": str(IDLE_MINUTES), "CHAT_PERIODIC_JOBS": periods}


def idle_session(client) -> str:
    session_id = converse(client, message="I want a refund for order 42")["sessionId"]
    time.sleep(IDLE_MINUTES * 60 + 0.1)
    return session_id


def test_a_scripted_analysis_becomes_the_stored_record_with_its_automatic_feedback(
    analysed_app, openai_server, receiver, client_for, admin_client
):
    openai_server.script([analysis()])
    session_id = idle_session(client_for("alice"))

    run_worker()

    (request,) = openai_server.requests
    assert request["model"] == "test-model"
    assert request["messages"][0] == {"role": "system", "content": insights.SYSTEM_PROMPT}
    assert "I want a refund for order 42" in request["messages"][-1]["content"]
    body = admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json()
    record = body["insights"]
    assert record["scoring"] == SCORING and record["detailMarkdown"] == REPORT
    assert (record["model"], record["version"]) == (MODEL, insights.VERSION)
    assert record["usage"] == {"inputTokens": 420, "outputTokens": 180}
    messages = admin_client.get(f"/api/chat-admin/sessions/{session_id}/messages").json()["messages"]
    assert record["lastAnalyzedMessageId"] == messages[-1]["messageId"] and record["generatedAt"]
    assert body["analysis"]["status"] == "done"

    feedback = client_for("alice").get(f"/api/chat/sessions/{session_id}/feedback").json()["feedback"]
    filed = {(item["type"], item["severity"]) for item in feedback}
    assert filed == {
        ("critical_issues_present", "critical"),  # requiresFollowup
        ("low_ai_confidence_level", "medium"),
        ("high_complexity_session", "low"),
        ("user_dissatisfied", "high"),
        ("goal_misalignment", "high"),
    }
    for item in feedback:
        assert item["reportedByHuman"] is False and item["createdByCustomer"] is False
        assert item["userId"] == "ai-feedback-user" and item["status"] == "open"
        assert item["messageId"] == record["lastAnalyzedMessageId"]

    run_worker()  # delivers the events the analysis left
    assert len(receiver.of("insight.generated")) == 1
    assert len(receiver.of("feedback.created")) == 5


def test_a_healthy_session_files_no_automatic_feedback(analysed_app, openai_server, client_for):
    happy = copy.deepcopy(SCORING)
    happy["assessments"] = {
        **happy["assessments"],
        "userSentiment": "positive",
        "goalCompletionStatus": "completed",
        "satisfactionLevel": "satisfied",
        "requiresFollowup": False,
    }
    happy["metrics"] = {**happy["metrics"], "complexityLevel": "low", "aiConfidenceLevel": "high"}
    openai_server.script([analysis(happy)])
    session_id = idle_session(client_for("alice"))
    run_worker()
    assert client_for("alice").get(f"/api/chat/sessions/{session_id}/feedback").json()["feedback"] == []


UNUSABLE = {
    "no-json": Reply(text="I think the session went fine."),
    "bad-json": Reply(text="<json>{not json}</json> report"),
    "bad-value": Reply(
        text=f"<json>{json.dumps({**SCORING, 'metrics': {**SCORING['metrics'], 'aiConfidenceLevel': 'sky-high'}})}</json> report"
    ),
    "no-report": Reply(text=f"<json>{json.dumps(SCORING)}</json>"),
    "provider-error": Reply(status=500, headers={"x-should-retry": "false"}),
    "timeout": Reply(text=analysis().text, first_token_delay=1.5),  # beyond CHAT_INSIGHTS_TIMEOUT_SECONDS (0.5 s here)
}


def test_unusable_answers_are_retried_then_recorded_as_failed_analyses(
    analysed_app, settings, openai_server, receiver, client_for, admin_client
):
    settings.CHAT_INSIGHTS_TIMEOUT_SECONDS = 0.5
    # Each session's conversation names the answer the scripted model gives it.
    openai_server.script(
        lambda request: next(reply for case, reply in UNUSABLE.items() if f"case {case}." in request["messages"][-1]["content"])
    )
    alice = client_for("alice")
    sessions = {case: converse(alice, message=f"case {case}.")["sessionId"] for case in UNUSABLE}
    time.sleep(IDLE_MINUTES * 60 + 0.1)

    def all_failed():
        bodies = {case: admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json() for case, session_id in sessions.items()}
        return bodies if all(body["analysis"] and body["analysis"]["status"] == "failed" for body in bodies.values()) else None

    with worker_process({**analysed_app, "CHAT_INSIGHTS_TIMEOUT_SECONDS": "0.5"}, worker_id="analysing-worker"):
        found = wait_until(all_failed, timeout=60, what="every analysis to fail")
        time.sleep(0.3)

    for case, body in found.items():
        assert body["insights"] is None and body["analysis"]["error"], case
        assert body["analysis"]["attempts"] == 3, case  # CHAT_TASK_MAX_ATTEMPTS here
        asked = [r for r in openai_server.requests if f"case {case}." in r["messages"][-1]["content"]]
        assert len(asked) == 3, case
    assert "no answer within 0.5 s" in found["timeout"]["analysis"]["error"]
    assert "<json>" in found["no-json"]["analysis"]["error"] and "aiConfidenceLevel" in found["bad-value"]["analysis"]["error"]
    assert all(alice.get(f"/api/chat/sessions/{s}/feedback").json()["feedback"] == [] for s in sessions.values())
    assert receiver.of("insight.generated") == []
    assert_task_failed_for_good(len(UNUSABLE))


def assert_task_failed_for_good(analyses: int):
    """The backend's own record shows the analysis task failed, and nothing of it is left to run."""
    from django.conf import settings

    if settings.CHAT_TASK_BACKEND == "database":
        from django_tasks_db.models import DBTaskResult

        statuses = list(DBTaskResult.objects.filter(task_path="chat.tasks.analyze_session").values_list("status", flat=True))
        assert statuses.count("FAILED") >= 3 * analyses
        assert set(statuses) <= {"FAILED", "SUCCESSFUL"}  # a duplicate run (recovered work) skips
    else:
        import django_rq
        from rq.registry import FailedJobRegistry, ScheduledJobRegistry

        queue = django_rq.get_queue("default")
        assert FailedJobRegistry(queue=queue).count >= 3 * analyses
        assert not [job for job in queue.get_jobs() if job.func_name == "chat.tasks.analyze_session"]
        assert ScheduledJobRegistry(queue=queue).count == 0


def test_a_failed_reanalysis_leaves_the_last_valid_record_whole(analysed_app, openai_server, client_for, admin_client):
    openai_server.script([analysis(), Reply(text="garbage")])
    alice = client_for("alice")
    session_id = idle_session(alice)
    run_worker()
    before = admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json()["insights"]

    response = admin_client.post(f"/api/chat-admin/sessions/{session_id}/insights")

    assert_error(response, 502, "INTERNAL_ERROR", mentions="json")
    after = admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json()
    assert after["insights"] == before and after["analysis"]["status"] == "failed"


def test_post_regenerates_now_and_get_answers_null_before_any_analysis(analysed_app, openai_server, client_for, admin_client):
    session_id = converse(client_for("alice"))["sessionId"]
    assert admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json() == {
        "success": True,
        "insights": None,
        "analysis": None,
    }

    openai_server.script([analysis()])
    body = admin_client.post(f"/api/chat-admin/sessions/{session_id}/insights").json()

    assert body["success"] is True and body["insights"]["scoring"] == SCORING
    assert admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json()["insights"] == body["insights"]


def test_insights_of_an_unknown_session_are_not_found_and_admins_only(analysed_app, client_for, admin_client):
    for path in (f"/api/chat-admin/sessions/{uuid.uuid4()}/insights", "/api/chat-admin/sessions/not-a-uuid/insights"):
        assert_error(admin_client.get(path), 404, "INVALID_SESSION_ID")
        assert_error(admin_client.post(path), 404, "INVALID_SESSION_ID")
    session_id = converse(client_for("alice"))["sessionId"]
    assert_error(client_for("alice").get(f"/api/chat-admin/sessions/{session_id}/insights"), 403, "INSUFFICIENT_PERMISSIONS")


def test_no_analysis_when_the_chat_app_has_insights_off(analysed_app, openai_server, client_for, admin_client):
    ChatApp.objects.filter(pk="support").update(features={"sessionInsights": {"enabled": False}})
    session_id = idle_session(client_for("alice"))
    run_worker()
    assert openai_server.requests == []
    assert admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json()["analysis"] is None


def test_a_later_message_makes_the_session_due_for_a_new_analysis(analysed_app, openai_server, client_for, admin_client):
    openai_server.script([analysis(), analysis(report="## Second look\nResolved after all.")])
    alice = client_for("alice")
    session_id = idle_session(alice)
    run_worker()
    first = admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json()["insights"]

    converse(alice, sessionId=session_id, message="Thanks, it arrived")
    time.sleep(IDLE_MINUTES * 60 + 0.1)
    run_worker()

    second = admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json()["insights"]
    assert second["detailMarkdown"].startswith("## Second look")
    assert second["lastAnalyzedMessageId"] != first["lastAnalyzedMessageId"]
    assert "Thanks, it arrived" in openai_server.requests[1]["messages"][-1]["content"]


def test_an_analysis_whose_worker_was_killed_is_taken_up_again(analysed_app, openai_server, client_for, admin_client):
    slow, served = Reply(text=analysis().text, first_token_delay=1.5), []

    def script(request):
        served.append(request)
        return slow if len(served) == 1 else analysis()

    openai_server.script(script)
    session_id = idle_session(client_for("alice"))

    with worker_process(analysed_app, worker_id="doomed-analyst") as doomed:
        wait_until(lambda: served, what="the model call")
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(timeout=10)
    with worker_process(analysed_app, worker_id="second-analyst"):
        body = wait_until(
            lambda: (b := admin_client.get(f"/api/chat-admin/sessions/{session_id}/insights").json())["insights"] and b,
            timeout=40,
            what="the analysis",
        )
    assert body["insights"]["scoring"] == SCORING


def test_the_admin_renders_insights_and_feedback_of_a_session(analysed_app, openai_server, client_for, admin_user):
    openai_server.script([analysis(report="## Goal\nA <script>alert(1)</script> refund.")])
    session_id = idle_session(client_for("alice"))
    run_worker()
    browser = Client()
    browser.force_login(admin_user)

    page = browser.get(f"/admin/chat/chatsession/{session_id}/change/").content.decode()

    assert "<h2>Goal</h2>" in page and "&lt;script&gt;" in page and "<script>alert(1)</script>" not in page
    assert "The user did not get a refund." in page and "goal_misalignment" in page.replace("Goal misalignment", "goal_misalignment")
    listing = browser.get("/admin/chat/chatsession/", {"insight_user_sentiment": "negative", "feedback_type": "user_dissatisfied"})
    assert session_id in listing.content.decode()
    assert session_id not in browser.get("/admin/chat/chatsession/", {"insight_user_sentiment": "positive"}).content.decode()


def test_the_admin_loads_no_image_a_report_names_and_its_pages_carry_a_content_security_policy(
    analysed_app, openai_server, client_for, admin_user
):
    openai_server.script([analysis(report="## Goal\nSee ![pixel](https://tracker.example/p.png?reader=1) here.")])
    session_id = idle_session(client_for("alice"))
    run_worker()
    browser = Client()
    browser.force_login(admin_user)

    response = browser.get(f"/admin/chat/chatsession/{session_id}/change/")

    page = response.content.decode()
    assert "<img" not in page.split("<h2>Goal</h2>", 1)[1].split("</div>", 1)[0]
    assert '<a href="https://tracker.example/p.png?reader=1">pixel</a>' in page, "the image is a link the reader may follow"
    policy = response["Content-Security-Policy"]
    assert "img-src 'self' data:" in policy and "script-src 'self';" in policy and "frame-ancestors 'none'" in policy
    assert "Content-Security-Policy" in browser.get("/admin/login/")


def test_the_offline_model_reviews_a_session_into_a_valid_record(analysed_app, client_for, admin_client, settings):
    """`make run` shows the whole loop with no network: the offline model answers the review."""
    settings.CHAT_INSIGHTS_MODEL = "offline"
    session_id = converse(client_for("alice"), message="Thanks, that was helpful!")["sessionId"]

    body = admin_client.post(f"/api/chat-admin/sessions/{session_id}/insights").json()

    assert body["success"] is True, body
    record = body["insights"]
    assert record["model"] == "offline"
    assert record["scoring"]["assessments"]["userSentiment"] == "positive"
    assert record["scoring"]["assessments"]["goalCompletionStatus"] == "completed"
    assert 0 <= record["scoring"]["scores"]["aiPerformance"]["overall"]["score"] <= 10
    assert record["detailMarkdown"].startswith("## Offline review")
