"""The browser's pages as the server renders them (README.md, "The chat page"), and the token-to-cookie
exchange. The page's behaviour in a browser is tested in tests/pages."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from chat.sessions.models import ChatSession
from chat.users.models import ChatUser
from tests.conftest import assert_error, bearer_token
from tests.factories import ChatAppFactory

pytestmark = pytest.mark.django_db


def signed_in(user_id: str = "alice", **fields) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(ChatUser.objects.create_user(user_id, "correct horse battery", **fields))
    return client


def config_of(response) -> dict:
    match = re.search(r'<script id="chat-config" type="application/json">(.*?)</script>', response.content.decode(), re.S)
    assert match, "the page carries its configuration"
    return json.loads(match.group(1))


@pytest.mark.parametrize("path", ["/", "/chat/support/", "/chat/support/6f1c6b0e-7f4e-4f43-9a43-7c59f1a0e9a1"])
def test_an_anonymous_visit_redirects_to_sign_in_and_back(client, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_the_sign_in_page_is_the_platforms_own_with_username_and_password(client):
    response = client.get("/accounts/login/?next=/chat/support/")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'name="username"' in html and 'name="password"' in html and 'value="/chat/support/"' in html
    assert "django-admin" not in html.lower() and "Sign in" in html
    assert "Sign in with" not in html  # no OpenID Connect provider configured
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_signing_in_sets_the_session_cookie_and_signing_out_ends_it():
    ChatUser.objects.create_user("bob", "correct horse battery")
    client = Client(enforce_csrf_checks=True)
    client.get("/accounts/login/")
    response = client.post(
        "/accounts/login/",
        {
            "username": "bob",
            "password": "correct horse battery",
            "next": "/chat/support/",
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
        },
    )
    assert response.status_code == 302 and response["Location"] == "/chat/support/"
    cookie = client.cookies["session"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"
    assert client.get("/api/chat/user").json()["user"]["userId"] == "bob"
    assert client.post("/accounts/logout/").status_code == 403  # CSRF on the cookie's unsafe requests
    assert client.post("/accounts/logout/", HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value).status_code == 302
    assert_error(client.get("/api/chat/user"), 401)


def test_the_home_page_lists_the_chat_apps_of_the_person():
    ChatAppFactory(chat_app_id="support", title="Support desk")
    ChatAppFactory(chat_app_id="internal", title="Internal desk", user_types=["internal-user"])
    ChatAppFactory(chat_app_id="mock-app", title="Mock app", test_type="mock")
    html = signed_in().get("/").content.decode()
    assert 'href="/chat/support/"' in html and "Support desk" in html
    assert "Internal desk" not in html and "Mock app" not in html


def test_the_chat_page_carries_what_the_script_needs_and_the_accessible_names(settings):
    settings.CHAT_SITE_FEATURES = {"promptInputFieldLabel": "Ask a question", "traces": {"enabled": True}}
    ChatAppFactory(
        chat_app_id="support",
        title="Support",
        features={"promptInputFieldLabel": {"enabled": True, "promptInputFieldLabel": "Ask <support>"}, "chatDisclaimerNotice": "Be kind."},
    )
    response = signed_in(first_name="Ada").get("/chat/support/")
    html = response.content.decode()
    assert response.status_code == 200
    assert '<label for="prompt" class="visually-hidden">Ask &lt;support&gt;</label>' in html
    # Disabled until the script has its handler in (it enables it), so a click before never posts the form itself.
    assert '<button type="submit" class="button button-primary send" disabled>Send</button>' in html
    assert 'role="log" aria-live="polite"' in html
    assert "Be kind." in html
    config = config_of(response)
    assert config["chatAppId"] == "support" and config["sessionId"] is None and config["user"]["name"] == "Ada"
    assert config["features"]["traces"] is True and config["features"]["inputLabel"] == "Ask <support>"
    assert config["features"]["logout"] is True  # on unless the chat app turns it off
    nonce = re.search(r"'nonce-([^']+)'", response["Content-Security-Policy"]).group(1)
    assert f'<script type="importmap" nonce="{nonce}">' in html


def test_the_input_is_named_message_when_no_label_is_set(settings):
    settings.CHAT_SITE_FEATURES = {}
    ChatAppFactory(chat_app_id="support")
    assert ">Message</label>" in signed_in().get("/chat/support/").content.decode()


def test_a_chat_app_one_may_not_use_or_that_does_not_exist_is_a_page_that_says_so():
    ChatAppFactory(chat_app_id="internal", user_types=["internal-user"])
    ChatAppFactory(chat_app_id="off", enabled=False)
    client = signed_in()
    for path, status, words in [
        ("/chat/internal/", 403, "You cannot use this chat app"),
        ("/chat/off/", 403, "switched off"),
        ("/chat/nope/", 404, "No such chat app"),
    ]:
        response = client.get(path)
        assert response.status_code == status
        assert words in response.content.decode()


def test_a_session_link_opens_it_for_its_owner_and_nothing_of_it_for_anyone_else():
    app = ChatAppFactory(chat_app_id="support")
    owner = signed_in("owner")
    session = ChatSession.objects.create(user_id="owner", chat_app_id=app.pk, agent_id=app.agent_id, title="Secret tangerine plan")
    mine = owner.get(f"/chat/support/{session.pk}")
    assert mine.status_code == 200 and config_of(mine)["sessionId"] == str(session.pk)

    theirs = signed_in("intruder").get(f"/chat/support/{session.pk}")
    assert theirs.status_code == 404
    assert config_of(theirs)["sessionId"] is None
    assert "tangerine" not in theirs.content.decode()
    assert "This conversation was not found" in theirs.content.decode()
    # In another chat app's page, the owner's session is not found either.
    ChatAppFactory(chat_app_id="other")
    assert owner.get(f"/chat/other/{session.pk}").status_code == 404


def test_a_bearer_token_becomes_the_session_cookie_and_delete_signs_out():
    client = Client(enforce_csrf_checks=True)
    token = bearer_token("carol", email="carol@example.com", given_name="Carol")
    response = client.post("/api/chat/auth/session", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert response.json()["user"]["userId"] == "carol" and response.json()["user"]["firstName"] == "Carol"
    cookie = client.cookies["session"]
    assert cookie.value and cookie["httponly"] and cookie["samesite"] == "Lax"
    assert client.get("/chat/nowhere/").status_code == 404  # signed in: the page, not a redirect to sign-in
    assert client.get("/api/chat/user").json()["user"]["userId"] == "carol"

    assert_error(client.delete("/api/chat/auth/session"), 403, "INSUFFICIENT_PERMISSIONS", mentions="CSRF")
    assert client.delete("/api/chat/auth/session", HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value).json() == {"success": True}
    assert_error(client.get("/api/chat/user"), 401)


def test_the_exchange_needs_a_valid_bearer_token(client):
    assert_error(client.post("/api/chat/auth/session"), 401, "AUTHENTICATION_REQUIRED")
    assert_error(client.post("/api/chat/auth/session", HTTP_AUTHORIZATION="Bearer forged.token.here"), 401)
    assert "session" not in client.cookies
    # A cookie session cannot mint another: the exchange is for bearer tokens only.
    ChatAppFactory(chat_app_id="support")
    cookie_only = signed_in("dave")
    cookie_only.get("/chat/support/")  # the page hands out the CSRF token
    response = cookie_only.post(
        "/api/chat/auth/session", content_type="application/json", HTTP_X_CSRFTOKEN=cookie_only.cookies["csrftoken"].value
    )
    assert_error(response, 401, "AUTHENTICATION_REQUIRED", mentions="Bearer")
