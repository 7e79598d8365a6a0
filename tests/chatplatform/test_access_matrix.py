"""The access matrix, generated from the URL configuration (docs/api.md, "Who may read what"): every route of
chatplatform.urls × {anonymous, another (non-admin) user, admin}.

Each route and method has one row in ACCESS saying who may use it. A route without a row fails
`test_every_route_has_a_row` (and a row without its route too): a new endpoint cannot land without
its access being tested. Adding a route's access is one line in ACCESS.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Any

import pytest
from django.test import Client
from django.urls import get_resolver
from django.urls.resolvers import URLPattern, URLResolver
from rest_framework.test import APIClient

from chat.files.models import ChatFile
from chat.users.models import ChatUser
from tests.conftest import assert_error, bearer_token
from tests.factories import ChatSessionFactory


class Access(Enum):
    ADMIN = "Admin API: anonymous 401, a non-admin 403, an admin served"
    FOR_USER = "Chat API with the userId rule: anonymous 401, another user's userId 403, an admin may act for them"
    OWNED = "Chat API on a record of a user: anonymous 401, another user's record 404, an admin acting for its owner served"
    SIGNED_IN = "Chat API for the caller alone: anonymous 401, any user served"
    PUBLIC = "open to all"
    NOT_FOUND = "the /api/ catch-all: 404 in the envelope for all"
    PAGE = "a page: anonymous redirected to sign in, a signed-in person served"
    DJANGO_ADMIN = "the Django admin: staff only; others are sent to its login"
    # Turns and their sessions' running turns: tests/converse/test_one_way_in.py (every credential and
    # refusal on each transport), test_durable_turns.py and test_approvals.py (another user's session: 404).
    TURN = "a turn, or a session's running turn"
    # The protocol doors answer in their protocols' shapes, not the envelope: tests/doors/ (no
    # credentials 401, a chat app or session the caller may not use 404, another user's response 404).
    DOOR = "a protocol door (docs/doors.md)"


# "METHOD route" as Django writes the route → who may use it.
ACCESS: dict[str, Access] = {
    "GET api/chat/user": Access.FOR_USER,
    "GET api/chat/user/prefs": Access.FOR_USER,
    "POST api/chat/user/prefs": Access.FOR_USER,
    "GET api/chat/user/export": Access.FOR_USER,
    "GET api/chat/user/usage": Access.FOR_USER,
    "GET api/chat/chat-apps": Access.FOR_USER,
    "GET api/chat/sessions": Access.FOR_USER,
    "GET api/chat/sessions/search": Access.FOR_USER,
    "POST api/chat/sessions/<str:sessionId>/pin": Access.OWNED,
    "DELETE api/chat/sessions/<str:sessionId>/pin": Access.OWNED,
    "POST api/chat/sessions/<str:sessionId>/share": Access.OWNED,
    "DELETE api/chat/sessions/<str:sessionId>/share": Access.OWNED,
    "GET api/chat/shared/<str:shareId>": Access.SIGNED_IN,
    "POST api/chat/converse": Access.TURN,
    "GET api/chat/sessions/<str:sessionId>/stream": Access.TURN,
    "POST api/chat/sessions/<str:sessionId>/stop": Access.TURN,
    "GET api/chat/sessions/<str:sessionId>/approvals": Access.TURN,
    "POST api/chat/sessions/<str:sessionId>/approvals/<str:approvalId>": Access.TURN,
    # tests/converse/test_branches.py: another user's session or answer 404, on JSON, SSE and the WebSocket.
    "POST api/chat/sessions/<str:sessionId>/messages/<str:messageId>/regenerate": Access.TURN,
    "DELETE api/chat/sessions/<str:sessionId>": Access.OWNED,
    "GET api/chat/sessions/<str:sessionId>/messages": Access.OWNED,
    "POST api/chat/sessions/<str:sessionId>/title": Access.OWNED,
    "GET api/chat/sessions/<str:sessionId>/feedback": Access.OWNED,
    "POST api/chat/feedback": Access.OWNED,
    "POST api/chat/auth/session": Access.SIGNED_IN,
    "DELETE api/chat/auth/session": Access.SIGNED_IN,
    "POST api/chat/files": Access.SIGNED_IN,
    "GET api/chat/files/<str:fileId>": Access.OWNED,
    "GET api/chat/files/<str:fileId>/content": Access.OWNED,
    "POST api/chat/tagdef/search": Access.SIGNED_IN,
    "GET api/chat/widget-data/<str:scope>/<str:tag>": Access.FOR_USER,
    "POST api/chat/widget-data/<str:scope>/<str:tag>": Access.FOR_USER,
    "DELETE api/chat/widget-data/<str:scope>/<str:tag>": Access.FOR_USER,
    "GET api/chat/webcomponent/<str:scope>/<str:tag>": Access.SIGNED_IN,
    "POST api/chat-admin/users/search": Access.ADMIN,
    "DELETE api/chat-admin/users/<str:userId>": Access.ADMIN,
    "GET api/chat-admin/users/<str:userId>/export": Access.ADMIN,
    "POST api/chat-admin/chat-app": Access.ADMIN,
    "GET api/chat-admin/chat-app/<str:chatAppId>": Access.ADMIN,
    "DELETE api/chat-admin/chat-app/<str:chatAppId>": Access.ADMIN,
    "POST api/chat-admin/chat-apps/search": Access.ADMIN,
    "POST api/chat-admin/feedback": Access.ADMIN,
    "GET api/chat-admin/config": Access.ADMIN,
    "POST api/chat-admin/config/apply": Access.ADMIN,
    "GET api/chat-admin/sessions/<str:sessionId>/messages": Access.ADMIN,
    "POST api/chat-admin/sessions/search": Access.ADMIN,
    "GET api/chat-admin/sessions/<str:sessionId>/insights": Access.ADMIN,
    "POST api/chat-admin/sessions/<str:sessionId>/insights": Access.ADMIN,
    "POST api/chat-admin/agent": Access.ADMIN,
    "GET api/chat-admin/agent/<str:agentId>": Access.ADMIN,
    "DELETE api/chat-admin/agent/<str:agentId>": Access.ADMIN,
    "GET api/chat-admin/agent/<str:agentId>/versions": Access.ADMIN,
    "GET api/chat-admin/agent/<str:agentId>/versions/<int:version>": Access.ADMIN,
    "POST api/chat-admin/agent/<str:agentId>/rollback": Access.ADMIN,
    "POST api/chat-admin/agents/search": Access.ADMIN,
    "POST api/chat-admin/tool": Access.ADMIN,
    "GET api/chat-admin/tool/<str:tool_id>": Access.ADMIN,
    "DELETE api/chat-admin/tool/<str:tool_id>": Access.ADMIN,
    "POST api/chat-admin/tools/search": Access.ADMIN,
    "POST api/chat-admin/tagdef": Access.ADMIN,
    "DELETE api/chat-admin/tagdef": Access.ADMIN,
    "POST api/chat-admin/tagdef/search": Access.ADMIN,
    "POST api/chat-admin/tagdef/clear-cache": Access.ADMIN,
    "POST api/chat-admin/tagdef/deploy": Access.ADMIN,
    "POST api/chat-admin/semantic-directive": Access.ADMIN,
    "DELETE api/chat-admin/semantic-directive": Access.ADMIN,
    "POST api/chat-admin/semantic-directive/search": Access.ADMIN,
    "POST api/chat-admin/semantic-directive/deploy": Access.ADMIN,
    "POST api/chat-admin/knowledge-base": Access.ADMIN,
    "GET api/chat-admin/knowledge-base/<str:knowledgeBaseId>": Access.ADMIN,
    "DELETE api/chat-admin/knowledge-base/<str:knowledgeBaseId>": Access.ADMIN,
    "GET api/chat-admin/knowledge-base/<str:knowledgeBaseId>/documents": Access.ADMIN,
    "POST api/chat-admin/knowledge-base/<str:knowledgeBaseId>/documents": Access.ADMIN,
    "DELETE api/chat-admin/knowledge-base/<str:knowledgeBaseId>/documents/<str:documentId>": Access.ADMIN,
    "POST api/chat-admin/knowledge-base/<str:knowledgeBaseId>/query": Access.ADMIN,
    "POST api/chat-admin/knowledge-bases/search": Access.ADMIN,
    "GET api/schema/": Access.PUBLIC,
    "GET api/docs/": Access.PUBLIC,
    "GET ^api(?:/.*)?$": Access.NOT_FOUND,
    "GET admin/": Access.DJANGO_ADMIN,
    "POST accounts/logout/": Access.PUBLIC,
    "GET healthz": Access.PUBLIC,
    "GET readyz": Access.PUBLIC,
    "GET metrics": Access.ADMIN,  # or CHAT_METRICS_TOKEN (tests/converse/test_metrics.py)
    "GET ": Access.PAGE,
    "GET accounts/login/": Access.PUBLIC,
    "POST accounts/login/": Access.PUBLIC,
    "PUT accounts/login/": Access.PUBLIC,  # Django's form views take PUT as POST
    "GET chat/<str:chat_app_id>/": Access.PAGE,
    "GET chat/<str:chat_app_id>/<str:session_id>": Access.PAGE,
    "GET shared/<str:share_id>": Access.PAGE,
    "GET widgets/renderers/<str:name>": Access.PUBLIC,  # deployment code, public as static files are
    "POST v1/chat/completions": Access.DOOR,
    "GET v1/models": Access.DOOR,
    "GET v1/models/<str:modelId>": Access.DOOR,
    "POST v1/responses": Access.DOOR,
    "GET v1/responses/<str:responseId>": Access.DOOR,
    "GET ^v1(?:/.*)?$": Access.DOOR,
    "POST a2a/<str:chatAppId>": Access.DOOR,
    "GET a2a/<str:chatAppId>/.well-known/agent-card.json": Access.DOOR,
    "POST mcp": Access.DOOR,
    "GET mcp": Access.DOOR,
    "POST api/ag-ui/<str:chatAppId>": Access.DOOR,
}

# A valid body where a route validates the body before it checks who acts ({sessionId}: bob's).
BODIES: dict[str, dict[str, Any]] = {
    "POST api/chat/user/prefs": {"prefs": {}},
    "POST api/chat/feedback": {"feedback": {"sessionId": "{sessionId}", "type": "user_thumbs_up"}},
    "POST api/chat/sessions/<str:sessionId>/title": {"title": "Named by someone"},
    "POST api/chat/widget-data/<str:scope>/<str:tag>": {"data": {"count": 1}},
}

_SKIPPED_METHODS = {"OPTIONS", "HEAD", "TRACE"}


def _methods(callback: Any) -> list[str]:
    """The HTTP methods a route's view answers: a ViewSet's action map, a class's handlers, GET for a function."""
    if getattr(callback, "actions", None):
        return [method.upper() for method in callback.actions if method.upper() not in _SKIPPED_METHODS]
    if hasattr(callback, "load"):  # a door imported at its first request (chat.doors.http.lazy_door)
        callback = callback.load()
    view_class = getattr(callback, "view_class", None)
    if view_class is None:
        return ["GET"]
    if view_class.__name__ == "UnknownPathView":  # every method, all alike: GET stands for them
        return ["GET"]
    return [m.upper() for m in view_class.http_method_names if m.upper() not in _SKIPPED_METHODS and hasattr(view_class, m)]


def routes() -> set[str]:
    """Every "METHOD route" of chatplatform.urls; an include outside /api/ (the Django admin) is one GET row."""
    found: set[str] = set()

    def walk(patterns: list[Any], prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if route.startswith("api/"):
                    walk(pattern.url_patterns, route)
                else:
                    found.add(f"GET {route}")
            elif isinstance(pattern, URLPattern):
                found.update(f"{method} {route}" for method in _methods(pattern.callback))

    walk(get_resolver().url_patterns, "")
    return found


def test_every_route_has_a_row_and_every_row_a_route():
    present = routes()
    assert present - set(ACCESS) == set(), "routes without a row in ACCESS: add one saying who may use each"
    assert set(ACCESS) - present == set(), "rows in ACCESS without their route"


# --- Requests -----------------------------------------------------------------------------------------

_FIXED = {"version": "1", "chatAppId": "absent", "agentId": "absent", "tool_id": "absent", "knowledgeBaseId": "absent"}
_FIXED |= {"shareId": "absent", "share_id": "absent"}
_FIXED |= {"userId": "absent", "documentId": "absent", "chat_app_id": "absent", "scope": "demo", "tag": "counter", "name": "demo.absent.js"}


def _path(route: str, records: dict[str, str]) -> str:
    if route.startswith("^api"):
        return "/api/nothing-here"
    values = {**_FIXED, **records}
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: values[m.group(1)], route)


@pytest.fixture
def records(db: None) -> dict[str, str]:
    """Bob's session and file: the records another user must never reach."""
    bob = ChatUser.objects.create_user("bob")
    session = ChatSessionFactory(user_id="bob")
    file = ChatFile.objects.create(user=bob, chat_app_id="support", name="a.txt", mime_type="text/plain", size=1, storage_name="none")
    return {"sessionId": str(session.pk), "session_id": str(session.pk), "fileId": str(file.pk)}


def _body(row: str, records: dict[str, str]) -> dict[str, Any]:
    def fill(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        return records["sessionId"] if value == "{sessionId}" else value

    return fill(BODIES.get(row, {}))


def _api(client: APIClient, method: str, path: str, body: dict[str, Any] | None, user_id: str | None) -> Any:
    if user_id is not None and method in {"GET", "DELETE"}:
        path += f"?userId={user_id}"
    elif user_id is not None:
        body = {**(body or {}), "userId": user_id}
    return getattr(client, method.lower())(path, body or {}, format="json") if method != "GET" else client.get(path)


def _bearer(user_id: str | None, *, admin: bool = False) -> APIClient:
    client = APIClient()
    if user_id is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {bearer_token(user_id, admin=admin)}")
    return client


def _signed_in(user_id: str | None, *, staff: bool = False) -> Client:
    client = Client()
    if user_id is not None:
        user, _ = ChatUser.objects.get_or_create(pk=user_id, defaults={"is_staff": staff, "is_superuser": staff})
        client.force_login(user)
    return client


def _served(response: Any) -> None:
    """Let through: neither refused for who the caller is, nor a failure of the service."""
    assert response.status_code not in {401, 403} and response.status_code < 500, (response.status_code, response.content[:300])


ROWS = sorted((row, access) for row, access in ACCESS.items() if access not in {Access.TURN, Access.DOOR})


@pytest.mark.parametrize(("row", "access"), ROWS, ids=[row for row, _ in ROWS])
def test_anonymous(row: str, access: Access, records: dict[str, str]):
    method, _, route = row.partition(" ")
    path = _path(route, records)
    if access in {Access.ADMIN, Access.FOR_USER, Access.OWNED, Access.SIGNED_IN}:
        assert_error(_api(_bearer(None), method, path, {}, None), 401, "AUTHENTICATION_REQUIRED")
    elif access is Access.NOT_FOUND:
        assert_error(_api(_bearer(None), method, path, {}, None), 404, "NOT_FOUND")
    elif access is Access.PAGE:
        response = getattr(Client(), method.lower())(path)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next="), response
    elif access is Access.DJANGO_ADMIN:
        response = Client().get(path)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), response
    else:
        _served(getattr(Client(), method.lower())(path))


@pytest.mark.parametrize(("row", "access"), ROWS, ids=[row for row, _ in ROWS])
def test_another_user(row: str, access: Access, records: dict[str, str]):
    """Alice, not an admin, at bob's records and on bob's behalf."""
    method, _, route = row.partition(" ")
    path = _path(route, records)
    alice = _bearer("alice")
    if access is Access.ADMIN:
        assert_error(_api(alice, method, path, {}, None), 403, "INSUFFICIENT_PERMISSIONS")
    elif access is Access.FOR_USER:
        assert_error(_api(alice, method, path, _body(row, records), "bob"), 403, "INSUFFICIENT_PERMISSIONS")
    elif access is Access.OWNED:
        response = _api(alice, method, path, _body(row, records), None)
        assert_error(response, 404)
        assert response.json()["code"] in {"INVALID_SESSION_ID", "NOT_FOUND"}
    elif access is Access.SIGNED_IN:
        _served(_api(alice, method, path, {}, None))
    elif access is Access.NOT_FOUND:
        assert_error(_api(alice, method, path, {}, None), 404, "NOT_FOUND")
    elif access is Access.PAGE:
        response = getattr(_signed_in("alice"), method.lower())(path)
        assert not (response.status_code == 302 and "/login/" in response["Location"]), response
        _served(response)
    elif access is Access.DJANGO_ADMIN:
        response = _signed_in("alice").get(path)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), response
    else:
        _served(getattr(_signed_in("alice"), method.lower())(path))


@pytest.mark.parametrize(("row", "access"), ROWS, ids=[row for row, _ in ROWS])
def test_admin(row: str, access: Access, records: dict[str, str]):
    method, _, route = row.partition(" ")
    path = _path(route, records)
    admin = _bearer("root-admin", admin=True)
    if access in {Access.ADMIN, Access.SIGNED_IN}:
        _served(_api(admin, method, path, {}, None))
    elif access in {Access.FOR_USER, Access.OWNED}:
        _served(_api(admin, method, path, _body(row, records), "bob"))
    elif access is Access.NOT_FOUND:
        assert_error(_api(admin, method, path, {}, None), 404, "NOT_FOUND")
    elif access is Access.DJANGO_ADMIN:
        assert _signed_in("staffer", staff=True).get(path).status_code == 200
    else:
        _served(getattr(_signed_in("staffer", staff=True), method.lower())(path))
