"""A small OpenID Connect provider on loopback, for tests: the authorization code flow with PKCE,
RS256 id tokens signed with a key of its own (published at its JWKS endpoint), and userinfo.

It signs in whoever it is told to (`provider.user = {...claims}`): its authorization endpoint
shows one "Continue" button, so a browser test walks the real redirects. Every token request is
recorded (`token_requests`) so a test can check what the relying party sent.

    with OIDCProvider(client_id="chat", client_secret="s") as provider:
        provider.issuer, provider.settings_env()  # the OIDC_* variables of the platform
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.peers.threaded import ThreadedServer

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

KEY_ID = "test-oidc-key"


class OIDCProvider:
    def __init__(self, *, client_id: str = "chat-platform", client_secret: str = "provider-secret") -> None:
        self.client_id = client_id
        self.client_secret = client_secret
        self.user: dict[str, Any] = {"sub": "oidc-user", "email": "oidc-user@example.com"}
        self.audience: str | None = None  # None: the client id (a test sets another to see it refused)
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._codes: dict[str, dict[str, Any]] = {}
        self._tokens: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.token_requests: list[dict[str, str]] = []
        self.logout_requests: list[dict[str, str]] = []
        self.ended_sessions: list[str] = []
        self._serving: ThreadedServer | None = None
        self.port = 0

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settings_env(self) -> dict[str, str]:
        """The platform's OIDC_* variables for this provider."""
        return {
            "OIDC_RP_CLIENT_ID": self.client_id,
            "OIDC_RP_CLIENT_SECRET": self.client_secret,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.issuer}/authorize",
            "OIDC_OP_TOKEN_ENDPOINT": f"{self.issuer}/token",
            "OIDC_OP_USER_ENDPOINT": f"{self.issuer}/userinfo",
            "OIDC_OP_JWKS_ENDPOINT": f"{self.issuer}/jwks",
            "OIDC_OP_ISSUER": self.issuer,
            "OIDC_PROVIDER_NAME": "Test IdP",
            "OIDC_OP_LOGOUT_ENDPOINT": f"{self.issuer}/logout",
        }

    def start(self) -> OIDCProvider:
        self._serving = ThreadedServer(self._app, name="oidc-provider")
        self.port = self._serving.start()
        return self

    def stop(self) -> None:
        if self._serving is not None:
            self._serving.stop()
            self._serving = None

    def __enter__(self) -> OIDCProvider:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- the endpoints --------------------------------------------------------------------------

    def _jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self._key.public_key()))
        return {"keys": [{**jwk, "kid": KEY_ID, "alg": "RS256", "use": "sig"}]}

    def _authorize_page(self, query: dict[str, str]) -> tuple[int, str, bytes]:
        required = ("client_id", "redirect_uri", "state", "response_type")
        if any(not query.get(name) for name in required) or query["client_id"] != self.client_id or query["response_type"] != "code":
            return 400, "text/plain", b"bad authorization request"
        fields = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in query.items())
        page = (
            "<!doctype html><title>Test IdP</title><h1>Test IdP</h1>"
            f"<p>Sign in to the chat platform as {html.escape(str(self.user.get('email') or self.user['sub']))}?</p>"
            f'<form method="post" action="/authorize">{fields}<button type="submit">Continue</button></form>'
        )
        return 200, "text/html; charset=utf-8", page.encode()

    def _approve(self, form: dict[str, str]) -> tuple[int, str, bytes, dict[str, str]]:
        code = secrets.token_urlsafe(16)
        with self._lock:
            self._codes[code] = {
                "redirect_uri": form["redirect_uri"],
                "nonce": form.get("nonce"),
                "challenge": form.get("code_challenge"),
                "user": dict(self.user),
            }
        location = f"{form['redirect_uri']}?{urlencode({'code': code, 'state': form['state']})}"
        return 302, "text/plain", b"", {"location": location}

    def _token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.token_requests.append(dict(form))
            grant = self._codes.pop(form.get("code", ""), None)
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return 401, {"error": "invalid_client"}
        if grant is None or form.get("redirect_uri") != grant["redirect_uri"]:
            return 400, {"error": "invalid_grant"}
        if grant["challenge"]:
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if digest != grant["challenge"]:
                return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        now = int(time.time())
        user = grant["user"]
        claims = {"iss": self.issuer, "aud": self.audience or self.client_id, "sub": user["sub"], "iat": now, "exp": now + 300}
        if grant["nonce"]:
            claims["nonce"] = grant["nonce"]
        claims["email"] = user.get("email")
        id_token = jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KEY_ID})
        access_token = secrets.token_urlsafe(16)
        with self._lock:
            self._tokens[access_token] = user
        return 200, {"access_token": access_token, "token_type": "Bearer", "expires_in": 300, "id_token": id_token}

    def _userinfo(self, authorization: str) -> tuple[int, dict[str, Any]]:
        scheme, _, token = authorization.partition(" ")
        with self._lock:
            user = self._tokens.get(token) if scheme.lower() == "bearer" else None
        if user is None:
            return 401, {"error": "invalid_token"}
        return 200, user

    def _logout(self, query: dict[str, str]) -> tuple[int, str, bytes, dict[str, str]]:
        """RP-initiated logout: the id token it was given must be one this provider issued to the client."""
        self.logout_requests.append(query)
        try:
            claims = jwt.decode(query.get("id_token_hint", ""), self._key.public_key(), algorithms=["RS256"], audience=self.client_id)
        except jwt.PyJWTError:
            return 400, "text/plain", b"invalid id_token_hint", {}
        self.ended_sessions.append(claims["sub"])
        return 302, "text/plain", b"", {"location": query["post_logout_redirect_uri"]}

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method, path = scope["method"], scope["path"]
        query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        extra: dict[str, str] = {}
        if method == "GET" and path == "/authorize":
            status, content_type, payload = self._authorize_page(query)
        elif method == "POST" and path == "/authorize":
            status, content_type, payload, extra = self._approve(form)
        elif method == "POST" and path == "/token":
            status, answer = self._token(form)
            content_type, payload = "application/json", json.dumps(answer).encode()
        elif method == "GET" and path == "/userinfo":
            status, answer = self._userinfo(headers.get("authorization", ""))
            content_type, payload = "application/json", json.dumps(answer).encode()
        elif method == "GET" and path == "/logout":
            status, content_type, payload, extra = self._logout(query)
        elif method == "GET" and path == "/jwks":
            status, content_type, payload = 200, "application/json", json.dumps(self._jwks()).encode()
        else:
            status, content_type, payload = 404, "text/plain", b"not found"
        response_headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(payload)).encode())]
        response_headers += [(k.encode(), v.encode()) for k, v in extra.items()]
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": payload})
