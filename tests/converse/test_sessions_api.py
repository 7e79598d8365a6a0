"""Sessions, messages, titles and feedback through the Chat API and the Admin API (docs/api.md, "Sessions")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from chat.feedback.models import ChatSessionFeedback
from chat.users.models import ChatUser
from tests.conftest import assert_error
from tests.factories import ChatMessageFactory, ChatSessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    ChatUser.objects.create_user("bob")
    return ChatUser.objects.create_user("alice")


def _session(**fields):
    return ChatSessionFactory(**fields)


def test_sessions_are_listed_newest_first_with_limit_and_chat_app_filter(user_client, alice):
    now = timezone.now()
    older = _session(create_date=now - timedelta(hours=2))
    newer = _session(create_date=now - timedelta(hours=1), chat_app_id="other")
    _session(user_id="bob")

    body = user_client.get("/api/chat/sessions").json()
    assert [s["sessionId"] for s in body["sessions"]] == [str(newer.pk), str(older.pk)]
    assert set(body["sessions"][0]) >= {"sessionId", "userId", "chatAppId", "agentId", "title", "status", "totalTokens", "totalCost"}
    assert [s["sessionId"] for s in user_client.get("/api/chat/sessions?limit=1").json()["sessions"]] == [str(newer.pk)]
    assert [s["sessionId"] for s in user_client.get("/api/chat/sessions?chatAppId=support").json()["sessions"]] == [str(older.pk)]
    assert_error(user_client.get("/api/chat/sessions?limit=101"), 400, "INVALID_REQUEST", mentions="limit")
    assert_error(user_client.get("/api/chat/sessions?userId=bob"), 403, "INSUFFICIENT_PERMISSIONS")


def test_messages_are_the_newest_limit_returned_oldest_first(user_client, alice):
    session = _session()
    start = timezone.now()
    for index in range(5):
        ChatMessageFactory(session=session, message=f"m{index}", timestamp=start + timedelta(seconds=index), traces=[{"stage": "model"}])

    body = user_client.get(f"/api/chat/sessions/{session.pk}/messages?limit=3").json()

    assert [m["message"] for m in body["messages"]] == ["m2", "m3", "m4"]
    assert "traces" not in body["messages"][0]
    assert len(user_client.get(f"/api/chat/sessions/{session.pk}/messages").json()["messages"]) == 5


def test_another_users_session_is_not_found_everywhere_in_the_chat_api(user_client, alice):
    bobs = _session(user_id="bob")
    for response in (
        user_client.get(f"/api/chat/sessions/{bobs.pk}/messages"),
        user_client.post(f"/api/chat/sessions/{bobs.pk}/title", {"title": "Mine now"}, format="json"),
        user_client.get(f"/api/chat/sessions/{bobs.pk}/feedback"),
        user_client.post("/api/chat/feedback", {"feedback": {"sessionId": str(bobs.pk), "type": "user_thumbs_up"}}, format="json"),
        user_client.get("/api/chat/sessions/not-a-uuid/messages"),
    ):
        assert_error(response, 404, "INVALID_SESSION_ID")


def test_the_title_is_set_explicitly_or_generated_from_the_first_exchange(user_client, alice, settings):
    settings.CHAT_TITLE_MODEL = "offline"
    session = _session()

    body = user_client.post(f"/api/chat/sessions/{session.pk}/title", {"title": "  Trip to Rome "}, format="json").json()
    assert body["success"] is True and body["title"] == "Trip to Rome" and body["session"]["title"] == "Trip to Rome"

    body = user_client.post(
        f"/api/chat/sessions/{session.pk}/title",
        {"userQuestionAsked": "How long is the flight from Paris to Rome today?", "answerToQuestionFromAgent": "About two hours."},
        format="json",
    ).json()
    assert body["title"] == "How long is the flight from Paris to"
    assert_error(user_client.post(f"/api/chat/sessions/{session.pk}/title", {}, format="json"), 400, mentions="title")


def test_feedback_is_added_by_the_sessions_user_and_listed_per_session(user_client, alice):
    session = _session()
    feedback = {"sessionId": str(session.pk), "type": "user_thumbs_down", "userComment": "Wrong city.", "severity": "high"}

    body = user_client.post("/api/chat/feedback", {"feedback": feedback}, format="json").json()

    created = body["feedback"]
    assert created["userId"] == "alice" and created["status"] == "open" and created["createdByCustomer"] is True
    assert created["feedbackId"]
    listed = user_client.get(f"/api/chat/sessions/{session.pk}/feedback").json()["feedback"]
    assert [f["feedbackId"] for f in listed] == [created["feedbackId"]]


def test_a_client_chosen_feedback_id_must_be_unique(user_client, alice):
    session = _session()
    feedback = {"feedbackId": "fb-1", "sessionId": str(session.pk), "type": "user_thumbs_up"}
    assert user_client.post("/api/chat/feedback", {"feedback": feedback}, format="json").json()["feedback"]["feedbackId"] == "fb-1"
    assert_error(
        user_client.post("/api/chat/feedback", {"feedback": feedback}, format="json"), 400, "INVALID_REQUEST", mentions="feedbackId"
    )
    assert ChatSessionFeedback.objects.count() == 1


@pytest.mark.parametrize(
    ("feedback", "mentions"),
    [
        ({"type": "meh"}, "feedback.type"),
        ({"userComment": "x" * 1001}, "feedback.userComment"),
        ({"status": "closed"}, "feedback.status"),
        ({"severity": "apocalyptic"}, "feedback.severity"),
    ],
)
def test_invalid_feedback_is_a_400_naming_the_field(user_client, alice, feedback, mentions):
    session = _session()
    payload = {"sessionId": str(session.pk), "type": "user_thumbs_up", **feedback}
    assert_error(user_client.post("/api/chat/feedback", {"feedback": payload}, format="json"), 400, mentions=mentions)


def test_operators_add_and_update_feedback_through_the_command_endpoint(admin_client, user_client, alice):
    session = _session()
    added = admin_client.post(
        "/api/chat-admin/feedback",
        {
            "command": "addChatSessionFeedback",
            "feedback": {"sessionId": str(session.pk), "type": "system_error", "internalComments": [{"comment": "Seen in logs."}]},
        },
        format="json",
    ).json()["feedback"]
    assert added["createdByCustomer"] is False and added["userId"] == "alice"
    (comment,) = added["internalComments"]
    assert comment["comment"] == "Seen in logs." and comment["userId"] == "root-admin"
    assert (comment["type"], comment["status"]) == ("comment", "open") and comment["commentId"] and comment["createdOn"]

    updated = admin_client.post(
        "/api/chat-admin/feedback",
        {"command": "updateChatSessionFeedback", "feedback": {"feedbackId": added["feedbackId"], "status": "resolved", "severity": "low"}},
        format="json",
    ).json()["feedback"]
    assert (updated["status"], updated["severity"], updated["type"]) == ("resolved", "low", "system_error")
    assert updated["internalComments"] == added["internalComments"]

    missing = {"command": "updateChatSessionFeedback", "feedback": {"feedbackId": "nope", "status": "closed"}}
    assert_error(admin_client.post("/api/chat-admin/feedback", missing, format="json"), 404, "NOT_FOUND")
    assert_error(admin_client.post("/api/chat-admin/feedback", {"command": "drop", "feedback": {}}, format="json"), 400, mentions="command")
    assert_error(user_client.post("/api/chat-admin/feedback", missing, format="json"), 403, "INSUFFICIENT_PERMISSIONS")


def test_admins_read_any_sessions_messages_with_traces(admin_client, alice):
    session = _session(user_id="bob")
    ChatMessageFactory(session=session, source="assistant", traces=[{"stage": "model", "durationMs": 3}])

    body = admin_client.get(f"/api/chat-admin/sessions/{session.pk}/messages").json()

    assert body["messages"][0]["traces"] == [{"stage": "model", "durationMs": 3}]
    assert_error(admin_client.get("/api/chat-admin/sessions/9b2f7f0e-1d5a-4a43-9d1c-000000000000/messages"), 404, "INVALID_SESSION_ID")


def test_session_search_pages_with_size_and_scroll_id_and_filters(admin_client, alice):
    start = timezone.now() - timedelta(days=1)
    sessions = [_session(create_date=start + timedelta(minutes=i)) for i in range(5)]
    _session(user_id="bob", create_date=start)

    first = admin_client.post(
        "/api/chat-admin/sessions/search", {"command": "sessionSearch", "search": {"userId": "alice"}, "size": 2}, format="json"
    ).json()
    assert first["total"] == 5 and first["pageSize"] == 2
    assert [s["sessionId"] for s in first["sessions"]] == [str(sessions[4].pk), str(sessions[3].pk)]
    pages = [first]
    while "scrollId" in pages[-1]:
        pages.append(
            admin_client.post(
                "/api/chat-admin/sessions/search",
                {"command": "sessionSearch", "search": {"userId": "alice"}, "size": 2, "scrollId": pages[-1]["scrollId"]},
                format="json",
            ).json()
        )
    assert [s["sessionId"] for page in pages for s in page["sessions"]] == [str(s.pk) for s in reversed(sessions)]

    dated = {"from": (start + timedelta(minutes=1)).isoformat(), "to": (start + timedelta(minutes=3)).isoformat()}
    body = admin_client.post(
        "/api/chat-admin/sessions/search", {"command": "sessionSearch", "search": {"dateFilter": dated, "sortBy": "oldest"}}, format="json"
    ).json()
    assert [s["sessionId"] for s in body["sessions"]] == [str(sessions[1].pk), str(sessions[2].pk)]

    too_big = {"command": "sessionSearch", "search": {}, "size": 101}
    assert_error(admin_client.post("/api/chat-admin/sessions/search", too_big, format="json"), 400, mentions="size")
    replayed = {"command": "sessionSearch", "search": {"userId": "bob"}, "scrollId": first["scrollId"]}
    assert_error(admin_client.post("/api/chat-admin/sessions/search", replayed, format="json"), 400, mentions="scrollId")
    forged = {"command": "sessionSearch", "search": {}, "scrollId": "garbage"}
    assert_error(admin_client.post("/api/chat-admin/sessions/search", forged, format="json"), 400, mentions="scrollId")


def test_the_django_admin_shows_sessions_with_their_messages_usage_and_cost(alice):
    staff = ChatUser.objects.create_superuser("operator")
    session = _session(total_tokens=42, total_cost=0.125)
    ChatMessageFactory(
        session=session, source="assistant", message="An answer.", usage={"inputTokens": 30, "outputTokens": 12, "totalCost": 0.125}
    )
    client = Client()
    client.force_login(staff)

    listing = client.get("/admin/chat/chatsession/?chat_app_id=support")
    page = client.get(f"/admin/chat/chatsession/{session.pk}/change/")

    assert listing.status_code == 200 and str(session.pk) in listing.content.decode()
    html = page.content.decode()
    assert page.status_code == 200 and "An answer." in html and "30 / 12" in html and "0.125000" in html
    assert client.get("/admin/chat/chatsessionfeedback/").status_code == 200
