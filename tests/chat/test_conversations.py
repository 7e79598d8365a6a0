"""Searching one's conversations, pins and share links through the Chat API and the shared page
(docs/api.md, "Searching one's conversations", "Pins", "Share links")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from chat.sessions.models import ChatMessage
from chat.users.models import ChatUser
from tests.conftest import assert_error
from tests.factories import ChatMessageFactory, ChatSessionFactory

pytestmark = pytest.mark.django_db

LONG_ANSWER = (
    "Paris has many museums worth a visit. The Louvre holds the Mona Lisa and thousands of other works; "
    "the Musée d'Orsay keeps the impressionists in an old railway station by the river. "
    "For something quieter, the Rodin museum has a garden with the Thinker in it."
)


@pytest.fixture
def alice(db):
    ChatUser.objects.create_user("bob")
    return ChatUser.objects.create_user("alice")


def _search(client, q, **params):
    query = "&".join(f"{key}={value}" for key, value in {"q": q, **params}.items())
    return client.get(f"/api/chat/sessions/search?{query}")


# --- search --------------------------------------------------------------------------------------


def test_search_finds_a_word_from_the_middle_of_an_old_answer_with_its_snippet(user_client, alice):
    session = ChatSessionFactory(title="Trip planning", last_update=timezone.now() - timedelta(days=300))
    ChatMessageFactory(session=session, message="Which museums should I see?")
    answer = ChatMessageFactory(session=session, source="assistant", message=LONG_ANSWER)
    ChatMessageFactory(session=ChatSessionFactory(), message="Nothing about art here")

    body = _search(user_client, "impressionists").json()

    assert body["success"] is True
    assert len(body["results"]) == 1
    result = body["results"][0]
    assert result["sessionId"] == str(session.pk) and result["messageId"] == str(answer.pk)
    assert result["title"] == "Trip planning"
    assert "impressionists" in result["snippet"] and len(result["snippet"]) < len(LONG_ANSWER)
    assert result["lastUpdate"].startswith(str(session.last_update.year))


def test_every_word_must_appear_and_words_match_their_other_forms(user_client, alice):
    museums = ChatMessageFactory(message="The museums are open on Sundays")
    ChatMessageFactory(message="The museum shop sells postcards")

    assert [r["messageId"] for r in _search(user_client, "museum sunday").json()["results"]] == [str(museums.pk)]
    assert len(_search(user_client, "museum").json()["results"]) == 2
    assert _search(user_client, "museum volcano").json()["results"] == []


def test_titles_are_searched_too_and_the_best_match_comes_first(user_client, alice):
    titled = ChatSessionFactory(title="Volcano hike in Iceland")
    ChatMessageFactory(session=titled, message="Bring boots")
    passing = ChatMessageFactory(
        message="Long answer about many things: trains, weather, food, hotels, museums, a volcano once, and more travel tips."
    )

    results = _search(user_client, "volcano").json()["results"]

    assert [(r["sessionId"], r["messageId"]) for r in results] == [(str(titled.pk), None), (str(passing.session_id), str(passing.pk))]
    assert results[0]["snippet"] == "Volcano hike in Iceland"


def test_search_never_shows_another_users_conversations(user_client, client_for, alice):
    ChatMessageFactory(session=ChatSessionFactory(user_id="bob", title="Bob's secret plans"), message="secret recipe for pancakes")

    assert _search(user_client, "secret").json()["results"] == []
    assert_error(_search(user_client, "secret", userId="bob"), 403, "INSUFFICIENT_PERMISSIONS")
    assert len(_search(client_for("bob"), "pancakes").json()["results"]) == 1
    assert len(_search(client_for("root", admin=True), "pancakes", userId="bob").json()["results"]) == 1


def test_a_user_whose_id_holds_any_characters_finds_only_their_own(client_for, alice):
    for user_id in ("ana@example.com", "ana@example.co", "ana+example/1"):
        ChatUser.objects.create_user(user_id)
        ChatMessageFactory(session=ChatSessionFactory(user_id=user_id), message=f"note of {user_id}: umbrella")

    for user_id in ("ana@example.com", "ana@example.co", "ana+example/1"):
        results = _search(client_for(user_id), "umbrella").json()["results"]
        assert [r["snippet"] for r in results] == [f"note of {user_id}: umbrella"]


def test_search_syntax_in_the_query_is_taken_as_words(user_client, alice):
    message = ChatMessageFactory(message='He said "NEAR" and OR-ed it, tags : body')

    for q in ('"near', "near)", "tags%20:%20body", "OR", "body*", "...", "%22%22"):
        response = _search(user_client, q)
        assert response.status_code == 200, (q, response.json())
    assert _search(user_client, "...").json()["results"] == []
    assert [r["messageId"] for r in _search(user_client, "tags%20:%20body").json()["results"]] == [str(message.pk)]


def test_the_search_follows_edits_titles_and_deletions(user_client, alice):
    session = ChatSessionFactory()
    message = ChatMessageFactory(session=session, message="first draft about giraffes")
    ChatMessage.objects.filter(pk=message.pk).update(message="final text about zebras")
    user_client.post(f"/api/chat/sessions/{session.pk}/title", {"title": "Savanna animals"}, format="json")

    assert _search(user_client, "giraffes").json()["results"] == []
    assert [r["messageId"] for r in _search(user_client, "zebras").json()["results"]] == [str(message.pk)]
    assert [r["messageId"] for r in _search(user_client, "savanna").json()["results"]] == [None]

    user_client.post(f"/api/chat/sessions/{session.pk}/title", {"title": "Plains wildlife"}, format="json")
    assert _search(user_client, "savanna").json()["results"] == []

    assert user_client.delete(f"/api/chat/sessions/{session.pk}").status_code == 200
    assert _search(user_client, "zebras").json()["results"] == []
    assert _search(user_client, "plains").json()["results"] == []
    if connection.vendor == "sqlite":  # no index row outlives its message (PostgreSQL's lives in the row)
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM chat_message_fts")
            assert cursor.fetchone()[0] == 0


def test_chat_app_id_keeps_the_search_to_one_chat_apps_sessions(user_client, alice):
    support = ChatMessageFactory(message="a lighthouse on the coast")
    ChatMessageFactory(session=ChatSessionFactory(chat_app_id="travel"), message="another lighthouse")

    results = _search(user_client, "lighthouse", chatAppId="support").json()["results"]

    assert [r["messageId"] for r in results] == [str(support.pk)]
    assert len(_search(user_client, "lighthouse").json()["results"]) == 2


def test_a_query_of_common_words_never_returns_messages_without_them(user_client, alice):
    ChatMessageFactory(message="the museum opens at nine")
    unrelated = ChatMessageFactory(message="dogs bark")

    # PostgreSQL drops English stop words from a query (nothing left: nothing matches); SQLite keeps them.
    results = _search(user_client, "the").json()["results"]

    assert str(unrelated.pk) not in {r["messageId"] for r in results}
    assert len(results) <= 1


def test_the_limit_caps_the_results(user_client, alice):
    for index in range(4):
        ChatMessageFactory(message=f"lantern number {index}")

    assert len(_search(user_client, "lantern", limit=3).json()["results"]) == 3
    assert len(_search(user_client, "lantern").json()["results"]) == 4


@pytest.mark.parametrize(
    ("query", "mentions"),
    [("", "q"), ("q=", "q"), ("q=%20%20", "q"), ("q=" + "a" * 201, "q"), ("q=x&limit=0", "limit"), ("q=x&limit=51", "limit")],
)
def test_a_bad_query_is_refused_naming_its_parameter(user_client, alice, query, mentions):
    assert_error(user_client.get(f"/api/chat/sessions/search?{query}"), 400, "INVALID_REQUEST", mentions=mentions)


# --- pins ----------------------------------------------------------------------------------------


def test_pinned_sessions_are_listed_first_and_marked(user_client, alice):
    now = timezone.now()
    old, middle, new = (ChatSessionFactory(create_date=now - timedelta(hours=hours)) for hours in (3, 2, 1))

    response = user_client.post(f"/api/chat/sessions/{old.pk}/pin", {}, format="json")
    assert response.status_code == 200 and response.json()["session"]["pinned"] is True

    sessions = user_client.get("/api/chat/sessions").json()["sessions"]
    assert [(s["sessionId"], s["pinned"]) for s in sessions] == [(str(old.pk), True), (str(new.pk), False), (str(middle.pk), False)]
    assert [s["sessionId"] for s in user_client.get("/api/chat/sessions?limit=2").json()["sessions"]] == [str(old.pk), str(new.pk)]

    user_client.post(f"/api/chat/sessions/{middle.pk}/pin", {}, format="json")
    sessions = user_client.get("/api/chat/sessions").json()["sessions"]
    assert [s["sessionId"] for s in sessions] == [str(middle.pk), str(old.pk), str(new.pk)]

    response = user_client.delete(f"/api/chat/sessions/{old.pk}/pin")
    assert response.status_code == 200 and response.json()["session"]["pinned"] is False
    sessions = user_client.get("/api/chat/sessions?chatAppId=support").json()["sessions"]
    assert [(s["sessionId"], s["pinned"]) for s in sessions] == [(str(middle.pk), True), (str(new.pk), False), (str(old.pk), False)]


def test_another_users_session_cannot_be_pinned(user_client, alice):
    bobs = ChatSessionFactory(user_id="bob")

    assert_error(user_client.post(f"/api/chat/sessions/{bobs.pk}/pin", {}, format="json"), 404, "INVALID_SESSION_ID")
    assert_error(user_client.delete(f"/api/chat/sessions/{bobs.pk}/pin"), 404, "INVALID_SESSION_ID")
    bobs.refresh_from_db()
    assert bobs.pinned_at is None


# --- share links ---------------------------------------------------------------------------------


def _conversation(user_id="alice", title="Paris museums"):
    session = ChatSessionFactory(user_id=user_id, title=title)
    start = timezone.now()
    ChatMessageFactory(session=session, message="Which museums?", timestamp=start)
    ChatMessageFactory(session=session, source="assistant", message=LONG_ANSWER, timestamp=start + timedelta(seconds=1))
    return session


def test_a_share_link_shows_the_snapshot_not_later_turns_to_any_signed_in_user(user_client, client_for, alice):
    session = _conversation()

    shared = user_client.post(f"/api/chat/sessions/{session.pk}/share", {}, format="json").json()
    ChatMessageFactory(session=session, message="A later question, not shared", timestamp=timezone.now() + timedelta(minutes=1))

    assert shared["success"] is True and shared["url"] == f"http://testserver/shared/{shared['shareId']}"
    body = client_for("bob").get(f"/api/chat/shared/{shared['shareId']}").json()
    assert body["session"]["title"] == "Paris museums" and body["session"]["shareId"] == shared["shareId"]
    assert [(m["source"], m["message"]) for m in body["messages"]] == [("user", "Which museums?"), ("assistant", LONG_ANSWER)]
    assert not {"userId", "usage", "traces", "files"} & set(body["messages"][0])

    bob = Client()
    bob.force_login(ChatUser.objects.get(pk="bob"))
    page = bob.get(f"/shared/{shared['shareId']}")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Paris museums" in text and "Which museums?" in text and "A later question" not in text
    assert "Content-Security-Policy" in page


def test_sharing_again_refreshes_the_snapshot_at_the_same_link(user_client, alice):
    session = _conversation()
    first = user_client.post(f"/api/chat/sessions/{session.pk}/share", {}, format="json").json()
    ChatMessageFactory(session=session, message="One more question", timestamp=timezone.now() + timedelta(minutes=1))

    second = user_client.post(f"/api/chat/sessions/{session.pk}/share", {}, format="json").json()

    assert second["shareId"] == first["shareId"]
    messages = user_client.get(f"/api/chat/shared/{first['shareId']}").json()["messages"]
    assert [m["message"] for m in messages][-1] == "One more question"


def test_a_revoked_share_is_gone_from_the_api_and_the_page(user_client, alice):
    session = _conversation()
    share_id = user_client.post(f"/api/chat/sessions/{session.pk}/share", {}, format="json").json()["shareId"]

    assert user_client.delete(f"/api/chat/sessions/{session.pk}/share").json() == {"success": True}

    assert_error(user_client.get(f"/api/chat/shared/{share_id}"), 404, "NOT_FOUND")
    browser = Client()
    browser.force_login(alice)
    assert browser.get(f"/shared/{share_id}").status_code == 404
    assert_error(user_client.delete(f"/api/chat/sessions/{session.pk}/share"), 404, "NOT_FOUND")


def test_only_the_sessions_user_shares_or_revokes(user_client, client_for, alice):
    bobs = _conversation(user_id="bob")
    share_id = client_for("bob").post(f"/api/chat/sessions/{bobs.pk}/share", {}, format="json").json()["shareId"]

    assert_error(user_client.post(f"/api/chat/sessions/{bobs.pk}/share", {}, format="json"), 404, "INVALID_SESSION_ID")
    assert_error(user_client.delete(f"/api/chat/sessions/{bobs.pk}/share"), 404, "INVALID_SESSION_ID")
    assert user_client.get(f"/api/chat/shared/{share_id}").status_code == 200


def test_deleting_a_session_deletes_its_share(user_client, alice):
    session = _conversation()
    share_id = user_client.post(f"/api/chat/sessions/{session.pk}/share", {}, format="json").json()["shareId"]

    assert user_client.delete(f"/api/chat/sessions/{session.pk}").status_code == 200

    assert_error(user_client.get(f"/api/chat/shared/{share_id}"), 404, "NOT_FOUND")


def test_the_shared_page_asks_a_stranger_to_sign_in(user_client, alice):
    share_id = user_client.post(f"/api/chat/sessions/{_conversation().pk}/share", {}, format="json").json()["shareId"]

    response = Client().get(f"/shared/{share_id}")

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    assert_error(Client().get(f"/api/chat/shared/{share_id}"), 401, "AUTHENTICATION_REQUIRED")


def test_an_operator_sees_shares_in_the_django_admin_and_revokes_one_by_deleting_it(user_client, alice):
    share_id = user_client.post(f"/api/chat/sessions/{_conversation().pk}/share", {}, format="json").json()["shareId"]
    operator = Client()
    operator.force_login(ChatUser.objects.create_user("operator", is_staff=True, is_superuser=True))

    listing = operator.get("/admin/chat/sessionshare/")
    assert listing.status_code == 200 and share_id in listing.content.decode()
    response = operator.post(f"/admin/chat/sessionshare/{share_id}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert_error(user_client.get(f"/api/chat/shared/{share_id}"), 404, "NOT_FOUND")
