"""Bearer JWT and the `session` cookie (docs/api.md, "Authentication")."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from chat.users.models import ChatUser
from tests.conftest import assert_error, bearer_token


def client_with(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.mark.django_db
@pytest.mark.parametrize(
    "token",
    [
        pytest.param(bearer_token("alice", expires_in=-3600), id="expired"),
        pytest.param(jwt.encode({"sub": "alice", "exp": time.time() + 60}, "another-key", algorithm="HS256"), id="wrong-key"),
        pytest.param("garbage.token.here", id="garbage"),
        pytest.param("x", id="not-a-jwt"),
        pytest.param(jwt.encode({"email": "a@b.c", "exp": time.time() + 60}, "k", algorithm="HS256"), id="missing-sub-wrong-key"),
        pytest.param(jwt.encode({"sub": "alice"}, "", algorithm="none"), id="alg-none"),
    ],
)
def test_invalid_tokens_are_refused_with_401(token):
    assert_error(client_with(token).get("/api/chat/user"), 401, "AUTHENTICATION_REQUIRED")


@pytest.mark.django_db
def test_token_without_subject_is_refused(settings):
    token = jwt.encode({"email": "a@b.c", "exp": time.time() + 60}, settings.JWT_SIGNING_KEY, algorithm="HS256")
    assert_error(client_with(token).get("/api/chat/user"), 401, mentions="sub")


@pytest.mark.django_db
def test_token_for_another_audience_is_refused(settings):
    settings.JWT_AUDIENCE = "chat-platform"
    wrong = jwt.encode({"sub": "alice", "aud": "billing", "exp": time.time() + 60}, settings.JWT_SIGNING_KEY, algorithm="HS256")
    right = jwt.encode({"sub": "alice", "aud": "chat-platform", "exp": time.time() + 60}, settings.JWT_SIGNING_KEY, algorithm="HS256")
    assert_error(client_with(wrong).get("/api/chat/user"), 401)
    assert client_with(right).get("/api/chat/user").status_code == 200


@pytest.mark.django_db
def test_token_from_another_issuer_is_refused(settings):
    settings.JWT_ISSUER = "https://idp.example"
    wrong = jwt.encode({"sub": "alice", "iss": "https://evil.example"}, settings.JWT_SIGNING_KEY, algorithm="HS256")
    assert_error(client_with(wrong).get("/api/chat/user"), 401)


@pytest.mark.django_db
def test_user_is_created_on_first_sight_and_refreshed_from_claims():
    client = client_with(bearer_token("carol", email="carol@example.com", given_name="Carol", user_type="internal-user"))
    user = client.get("/api/chat/user").json()["user"]
    assert user == user | {"userId": "carol", "email": "carol@example.com", "firstName": "Carol", "userType": "internal-user"}

    client = client_with(bearer_token("carol", email="carol@new.example", custom_data={"accountId": "A1"}))
    user = client.get("/api/chat/user").json()["user"]
    assert user["email"] == "carol@new.example"
    assert user["customData"] == {"accountId": "A1"}
    assert ChatUser.objects.filter(user_id="carol").count() == 1


@pytest.mark.django_db
def test_issue_token_output_is_accepted_and_admin_flag_grants_admin():
    out = StringIO()
    call_command("issue_token", "ops-1", "--admin", "--email", "ops@example.com", "--custom-data", '{"region": "eu"}', stdout=out)
    token = out.getvalue().strip()
    assert "\n" not in token
    client = client_with(token)
    assert client.get("/api/chat/user").json()["user"]["email"] == "ops@example.com"
    assert client.post("/api/chat-admin/users/search", {}, format="json").status_code == 200
    assert ChatUser.objects.get(user_id="ops-1").is_staff


@pytest.mark.django_db
def test_issue_token_refuses_bad_custom_data():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="custom-data"):
        call_command("issue_token", "ops-1", "--custom-data", "[1, 2]", stdout=StringIO())


@pytest.fixture
def jwks_server():
    """A loopback identity provider publishing one RSA key as a JWKS."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid="test-key", use="sig", alg="RS256")
    body = json.dumps({"keys": [jwk]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/.well-known/jwks.json", key
    server.shutdown()


@pytest.mark.django_db
def test_token_signed_by_a_jwks_key_is_accepted(settings, jwks_server):
    url, key = jwks_server
    settings.JWT_JWKS_URL = url
    token = jwt.encode({"sub": "dave", "exp": time.time() + 60}, key, algorithm="RS256", headers={"kid": "test-key"})
    response = client_with(token).get("/api/chat/user")
    assert response.status_code == 200, response.json()
    assert response.json()["user"]["userId"] == "dave"


@pytest.mark.django_db
def test_rs256_token_is_refused_when_no_jwks_is_configured(settings, jwks_server):
    _, key = jwks_server
    settings.JWT_JWKS_URL = None
    token = jwt.encode({"sub": "dave"}, key, algorithm="RS256", headers={"kid": "test-key"})
    assert_error(client_with(token).get("/api/chat/user"), 401)


@pytest.fixture
def staff_user(db):
    return ChatUser.objects.create_user("operator", "correct horse battery", is_staff=True, is_superuser=True)


def login(client: Client) -> None:
    client.get("/accounts/login/")
    response = client.post(
        "/accounts/login/",
        {"username": "operator", "password": "correct horse battery", "csrfmiddlewaretoken": client.cookies["csrftoken"].value},
    )
    assert response.status_code == 302, response.content


def test_cookie_login_sets_an_httponly_cookie_named_session(staff_user):
    client = Client(enforce_csrf_checks=True)
    login(client)
    cookie = client.cookies["session"]
    assert cookie["httponly"]
    assert client.get("/api/chat/user").json()["user"]["userId"] == "operator"


def test_unsafe_cookie_request_without_csrf_token_is_refused(staff_user):
    client = Client(enforce_csrf_checks=True)
    login(client)
    response = client.post("/api/chat/user/prefs", {"prefs": {"a": 1}}, content_type="application/json")
    assert_error(response, 403, "INSUFFICIENT_PERMISSIONS", mentions="CSRF")
    response = client.post(
        "/api/chat/user/prefs",
        {"prefs": {"a": 1}},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=client.cookies["csrftoken"].value,
    )
    assert response.status_code == 200


def test_staff_user_logs_in_to_the_django_admin(staff_user):
    client = Client()
    client.get("/accounts/login/")
    assert client.login(username="operator", password="correct horse battery")
    assert client.get("/admin/").status_code == 200
    assert client.get("/admin/chat/chatuser/?q=oper").status_code == 200
    assert client.get("/admin/chat/chatuser/?user_type__exact=internal-user").status_code == 200
