"""Feedback on the reference vocabulary (docs/api.md, "Feedback"): the 27 types, internal comments with their
types and statuses, the update rule, the Django admin, and the migration of earlier values."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from chat.feedback.models import FeedbackComment, FeedbackType
from tests.conftest import assert_error
from tests.factories import ChatMessageFactory, ChatSessionFactory

pytestmark = pytest.mark.django_db

TYPES = [
    "user_thumbs_up", "user_thumbs_down", "incorrect_information", "incomplete_information", "off_topic", "hallucination",
    "confusing_response", "outdated_information", "inappropriate_content", "privacy_concern", "harmful_content", "system_error",
    "timeout_occurred", "tool_failure", "poor_performance", "training_example", "context_awareness_issue", "goal_misalignment",
    "tool_capability_gap", "tool_performance_issue", "cost_issue", "high_complexity_session", "low_ai_confidence_level",
    "critical_issues_present", "user_dissatisfied", "user_question_to_chat_author", "other",
]  # fmt: skip


@pytest.fixture
def session(client_for):
    client_for("alice").get("/api/chat/user")  # alice exists, as after her first request
    return ChatSessionFactory(user_id="alice")


def add(client, session, **fields):
    return client.post(
        "/api/chat-admin/feedback",
        {"command": "addChatSessionFeedback", "feedback": {"sessionId": str(session.pk), "type": "other", **fields}},
        format="json",
    )


def update(client, feedback_id, **fields):
    return client.post(
        "/api/chat-admin/feedback",
        {"command": "updateChatSessionFeedback", "feedback": {"feedbackId": feedback_id, **fields}},
        format="json",
    )


def test_the_vocabulary_is_the_references_27_types_exactly(session, user_client):
    assert FeedbackType.values == TYPES
    for feedback_type in TYPES:
        response = user_client.post(
            "/api/chat/feedback", {"feedback": {"sessionId": str(session.pk), "type": feedback_type}}, format="json"
        )
        assert response.json()["feedback"]["type"] == feedback_type
    for earlier in ("thumbs_up", "bug", "incorrect_answer"):
        body = assert_error(
            user_client.post("/api/chat/feedback", {"feedback": {"sessionId": str(session.pk), "type": earlier}}, format="json"),
            400,
            "INVALID_REQUEST",
            mentions="feedback.type",
        )
        assert "user_thumbs_up" in body["error"]


def test_internal_comments_are_objects_with_a_type_and_a_status_stamped_by_the_service(session, admin_client):
    feedback = add(
        admin_client,
        session,
        internalComments=[
            {"comment": "Call the customer.", "type": "customer_outreach_recommended"},
            {
                "comment": "Looks like a tool bug.",
                "type": "technical_action_required",
                "status": "open",
                "userId": "forged",
                "createdOn": "2001-01-01",
            },
        ],
    ).json()["feedback"]

    first, second = feedback["internalComments"]
    assert (first["comment"], first["type"], first["status"]) == ("Call the customer.", "customer_outreach_recommended", "open")
    assert second["type"] == "technical_action_required"
    assert first["userId"] == second["userId"] == "root-admin"  # the author is who wrote it, not what the client claims
    assert not second["createdOn"].startswith("2001") and first["commentId"] != second["commentId"]


def test_an_update_changes_only_status_severity_type_user_comment_and_internal_comments(session, admin_client, client_for):
    feedback = add(admin_client, session, userComment="Wrong city.", internalComments=[{"comment": "Seen."}]).json()["feedback"]
    (seen,) = feedback["internalComments"]

    updated = update(
        client_for("ops-2", admin=True),
        feedback["feedbackId"],
        status="in_review",
        severity="critical",
        type="incorrect_information",
        userComment="Wrong city, twice.",
        internalComments=[{**seen, "status": "closed"}, {"comment": "Customer called back.", "type": "customer_outreach_made"}],
        # Sent back as read, outside the update rule: left as they are.
        userId="mallory",
        messageId="8a7d0e5c-0000-4000-8000-000000000000",
        reportedByHuman=False,
        createdByCustomer=True,
        sessionId=str(session.pk),
        createdOn="2001-01-01T00:00:00Z",
    ).json()["feedback"]

    assert (updated["status"], updated["severity"], updated["type"], updated["userComment"]) == (
        "in_review",
        "critical",
        "incorrect_information",
        "Wrong city, twice.",
    )
    assert (updated["userId"], updated["messageId"], updated["reportedByHuman"], updated["createdByCustomer"]) == (
        "alice",
        None,
        True,
        False,
    )
    assert updated["createdOn"] == feedback["createdOn"] and updated["updatedOn"] > feedback["updatedOn"]
    kept, new = updated["internalComments"]
    assert {**kept, "status": "open"} == seen and kept["status"] == "closed"  # same id, author and date
    assert new["userId"] == "ops-2" and new["type"] == "customer_outreach_made"


@pytest.mark.parametrize(
    ("fields", "mentions"),
    [
        ({"internalComments": [{"type": "comment"}]}, "feedback.internalComments[0].comment"),
        ({"internalComments": [{"comment": "  "}]}, "feedback.internalComments[0].comment"),
        ({"internalComments": [{"comment": "x", "type": "gossip"}]}, "feedback.internalComments[0].type"),
        ({"internalComments": [{"comment": "x", "status": "pending"}]}, "feedback.internalComments[0].status"),
        ({"internalComments": [{"comment": "x", "attachments": []}]}, "feedback.internalComments[0].attachments"),
        ({"internalComments": "Seen in logs."}, "feedback.internalComments"),
        ({"type": "bug"}, "feedback.type"),
        ({"userComment": "x" * 1001}, "feedback.userComment"),
    ],
)
def test_bad_feedback_writes_are_400s_naming_the_field_and_write_nothing(session, admin_client, fields, mentions):
    feedback = add(admin_client, session).json()["feedback"]
    assert_error(add(admin_client, session, **fields), 400, "INVALID_REQUEST", mentions=mentions)
    assert_error(update(admin_client, feedback["feedbackId"], **fields), 400, "INVALID_REQUEST", mentions=mentions)
    assert session.feedback.count() == 1 and FeedbackComment.objects.count() == 0


def test_a_chat_user_may_not_write_internal_comments(session, user_client):
    body = {"feedback": {"sessionId": str(session.pk), "type": "other", "internalComments": [{"comment": "hi"}]}}
    assert_error(user_client.post("/api/chat/feedback", body, format="json"), 400, mentions="feedback.internalComments")


def test_operators_edit_feedback_and_its_internal_comments_in_the_django_admin(session, admin_client, admin_user):
    feedback = add(admin_client, session, internalComments=[{"comment": "Seen."}]).json()["feedback"]
    (seen,) = feedback["internalComments"]
    browser = Client()
    browser.force_login(admin_user)
    form = {
        "status": "resolved",
        "severity": "low",
        "type": "tool_failure",
        "user_comment": "",
        "internal_comments-TOTAL_FORMS": "2",
        "internal_comments-INITIAL_FORMS": "1",
        "internal_comments-MIN_NUM_FORMS": "0",
        "internal_comments-MAX_NUM_FORMS": "1000",
        "internal_comments-0-comment_id": seen["commentId"],
        "internal_comments-0-feedback": feedback["feedbackId"],
        "internal_comments-0-comment": "Seen, twice.",
        "internal_comments-0-type": "comment",
        "internal_comments-0-status": "closed",
        "internal_comments-1-feedback": feedback["feedbackId"],
        "internal_comments-1-comment": "Fixed the tool.",
        "internal_comments-1-type": "technical_action_completed",
        "internal_comments-1-status": "open",
    }

    response = browser.post(f"/admin/chat/chatsessionfeedback/{feedback['feedbackId']}/change/", form)

    assert response.status_code == 302, response.content.decode()[-3000:]
    read = admin_client.get(f"/api/chat/sessions/{session.pk}/feedback", {"userId": "alice"}).json()["feedback"][0]
    assert (read["status"], read["severity"], read["type"]) == ("resolved", "low", "tool_failure")
    first, second = read["internalComments"]
    assert (first["commentId"], first["comment"], first["status"], first["userId"]) == (
        seen["commentId"],
        "Seen, twice.",
        "closed",
        "root-admin",
    )
    assert (second["comment"], second["type"], second["userId"]) == ("Fixed the tool.", "technical_action_completed", "admin")
    listing = browser.get("/admin/chat/chatsessionfeedback/", {"comment_type": "technical_action_completed"}).content.decode()
    assert feedback["feedbackId"] in listing


@pytest.mark.django_db(transaction=True)
def test_the_migration_maps_earlier_feedback_onto_the_reference_vocabulary_and_loses_nothing():
    before, after = ("chat", "0008_message_citations"), ("chat", "0009_events_insights_feedback_vocabulary")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    old = executor.loader.project_state([before]).apps
    try:
        user = old.get_model("chat", "ChatUser").objects.create(user_id="alice", password="!")
        session = old.get_model("chat", "ChatSession").objects.create(user=user, chat_app_id="support", agent_id="helper")
        Feedback = old.get_model("chat", "ChatSessionFeedback")
        for feedback_id, feedback_type, notes in [
            ("up", "thumbs_up", ""),
            ("down", "thumbs_down", "Customer was angry."),
            ("wrong", "incorrect_answer", ""),
            ("partial", "incomplete_answer", ""),
            ("harm", "harmful_content", ""),
            ("bug", "bug", "Stack trace in logs."),
            ("wish", "feature_request", ""),
            ("else", "other", ""),
        ]:
            Feedback.objects.create(feedback_id=feedback_id, session=session, user_id="alice", type=feedback_type, internal_comments=notes)

        executor = MigrationExecutor(connection)
        executor.migrate([after])
        new = executor.loader.project_state([after]).apps
        migrated = {row.feedback_id: row.type for row in new.get_model("chat", "ChatSessionFeedback").objects.all()}
        comments = {}
        for row in new.get_model("chat", "FeedbackComment").objects.order_by("position"):
            comments.setdefault(row.feedback_id, []).append(row.comment)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())

    assert migrated == {
        "up": "user_thumbs_up",
        "down": "user_thumbs_down",
        "wrong": "incorrect_information",
        "partial": "incomplete_information",
        "harm": "harmful_content",
        "bug": "system_error",
        "wish": "other",
        "else": "other",
    }
    assert comments == {
        "down": ["Customer was angry."],
        "bug": ["Stack trace in logs.", "type was bug before the reference vocabulary"],
        "wish": ["type was feature_request before the reference vocabulary"],
    }


def test_a_taken_feedback_id_is_refused_alike_whoever_holds_it_and_shows_nothing_of_theirs(client_for):
    """docs/api.md, "Feedback": the id is the only thing a caller learns is in use."""
    alice, bob = client_for("alice"), client_for("bob")
    alice.get("/api/chat/user"), bob.get("/api/chat/user")
    theirs, mine = ChatSessionFactory(user_id="alice"), ChatSessionFactory(user_id="bob")

    def report(client, session, comment):
        feedback = {"feedbackId": "fb-2026-001", "sessionId": str(session.pk), "type": "other", "userComment": comment}
        return client.post("/api/chat/feedback", {"feedback": feedback}, format="json")

    assert report(alice, theirs, "the card number 4111 was shown").status_code == 200
    by_another = assert_error(report(bob, mine, "mine"), 400, "INVALID_REQUEST")
    by_the_holder = assert_error(report(alice, theirs, "again"), 400, "INVALID_REQUEST")

    assert (
        by_another
        == by_the_holder
        == {
            "success": False,
            "error": "feedback.feedbackId: must be unique; leave it out and the service chooses one",
            "code": "INVALID_REQUEST",
        }
    )
    assert bob.get(f"/api/chat/sessions/{mine.pk}/feedback").json()["feedback"] == []
    kept = alice.get(f"/api/chat/sessions/{theirs.pk}/feedback").json()["feedback"]
    assert [(item["feedbackId"], item["userComment"]) for item in kept] == [("fb-2026-001", "the card number 4111 was shown")]


def test_feedback_naming_a_message_of_another_session_is_refused_and_nothing_is_stored(client_for):
    alice, bob = client_for("alice"), client_for("bob")
    alice.get("/api/chat/user"), bob.get("/api/chat/user")
    hers, his = ChatSessionFactory(user_id="alice"), ChatSessionFactory(user_id="bob")
    his_message = ChatMessageFactory(session=his, message="bob's private question")
    feedback = {"sessionId": str(hers.pk), "type": "other", "messageId": str(his_message.pk)}

    response = alice.post("/api/chat/feedback", {"feedback": feedback}, format="json")

    assert_error(response, 400, "INVALID_REQUEST", mentions=f"feedback.messageId: must name a message of session {hers.pk}")
    assert alice.get(f"/api/chat/sessions/{hers.pk}/feedback").json()["feedback"] == []
