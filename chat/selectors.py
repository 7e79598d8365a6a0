"""Reads on chat records."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.files.storage import storages
from django.db.models import Q, QuerySet

from agents.models import TestType
from chat import files as chat_files
from chat.features import resolve_features
from chat.models import ApplyRulesAs, ChatApp, ChatFile, ChatMessage, ChatSession, ChatSessionFeedback, ChatUser
from chatplatform.api.errors import Code, InvalidRequest, NotFound, PermissionDenied
from chatplatform.api.pagination import decode_token, encode_token
from chatplatform.generations import LocalCopies

# The chat apps, agents and tools a turn reads (chat.turn.admission), kept per process: three queries
# were half of a turn's start. Any save or delete of one replaces the generation (chat/apps.py).
turn_definitions = LocalCopies("definitions:generation", lifetime=60.0)


def users_search(*, user_id_partial: str, limit: int) -> QuerySet[ChatUser]:
    """Users whose id starts with `user_id_partial`, case-insensitively (index: chatuser_userid_upper)."""
    users = ChatUser.objects.order_by("user_id")
    if user_id_partial:
        users = users.filter(user_id__istartswith=user_id_partial)
    return users[:limit]


def chat_app_get(*, chat_app_id: str) -> ChatApp:
    """The chat app, or 404 INVALID_CHAT_APP_ID."""
    app = ChatApp.objects.filter(chat_app_id=chat_app_id).first()
    if app is None:
        raise NotFound(f"chat app {chat_app_id} not found", code=Code.INVALID_CHAT_APP_ID)
    return app


def chat_apps_search(*, chat_app_ids: Iterable[str] | None) -> QuerySet[ChatApp]:
    """The chat apps with these ids (unknown ids are skipped), or every chat app; by chatAppId."""
    apps = ChatApp.objects.order_by("chat_app_id")
    if chat_app_ids is not None:
        apps = apps.filter(chat_app_id__in=list(chat_app_ids))
    return apps


def chat_app_usable_by(app: ChatApp, user: ChatUser) -> bool:
    """Whether `user` may use `app` (CONTRACT §5; converse answers 403 when not).

    The app must be enabled. A non-empty `userTypes` is a rule that holds when it contains the
    user's type; a non-empty `userRoles` one that holds when it shares a role with the user; an
    empty list sets no rule. `applyRulesAs: and` needs every rule set to hold, `or` any of them;
    no rule set lets everyone in. (An empty list does not "pass" under `or`: otherwise setting
    only `userRoles` with `or` would restrict nobody, which no operator means.)
    """
    if not app.enabled:
        return False
    rules = []
    if app.user_types:
        rules.append(user.user_type in app.user_types)
    if app.user_roles:
        rules.append(bool(set(app.user_roles) & set(user.roles or [])))
    if not rules:
        return True
    return any(rules) if app.apply_rules_as == ApplyRulesAs.OR else all(rules)


def chat_apps_for_user(*, user: ChatUser, chat_app_id: str | None = None, for_home_page: bool = False) -> list[ChatApp]:
    """The chat apps `user` may use, by chatAppId (index: chatapp_enabled).

    `chat_app_id` narrows to that one app; `for_home_page` leaves out test apps (testType mock).
    The type and role rules are JSON lists, so they are applied here rather than in SQL.
    """
    apps = ChatApp.objects.filter(enabled=True).order_by("chat_app_id")
    if chat_app_id:
        apps = apps.filter(chat_app_id=chat_app_id)
    if for_home_page:
        apps = apps.exclude(test_type=TestType.MOCK)
    return [app for app in apps if chat_app_usable_by(app, user)]


def chat_app_for_use(*, chat_app_id: str, user: ChatUser) -> ChatApp:
    """The chat app, when `user` may use it: 404 INVALID_CHAT_APP_ID, 403 INSUFFICIENT_PERMISSIONS otherwise."""
    app = chat_app_get(chat_app_id=chat_app_id)
    if not chat_app_usable_by(app, user):
        reason = "is disabled" if not app.enabled else "is not available to you"
        raise PermissionDenied(f"insufficient permissions: chat app {app.pk} {reason}")
    return app


def chat_app_features(app: ChatApp) -> dict[str, Any]:
    """The features in force in a chat app: the site's and the app's, resolved (CONTRACT §6)."""
    return resolve_features(site=settings.CHAT_SITE_FEATURES, app=app.features or {})


def user_get(*, user_id: str) -> ChatUser:
    """An existing user, or 404 NOT_FOUND (CONTRACT §4)."""
    user = ChatUser.objects.filter(user_id=user_id).first()
    if user is None:
        raise NotFound(f"user {user_id} not found")
    return user


# --- sessions, messages, feedback -------------------------------------------------------------


def session_uuid(session_id: Any) -> uuid.UUID:
    """`session_id` as the UUID it names; 404 INVALID_SESSION_ID when it cannot name a session."""
    try:
        return uuid.UUID(str(session_id))
    except (ValueError, TypeError, AttributeError):
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID) from None


def session_get(*, session_id: Any, user_id: str | None = None, chat_app_id: str | None = None) -> ChatSession:
    """The session, or 404 INVALID_SESSION_ID; with `user_id` (or `chat_app_id`) another user's
    (or app's) session is "not found" too, never a 403 that would confirm it exists (CONTRACT §3)."""
    sessions = ChatSession.objects.filter(pk=session_uuid(session_id))
    if user_id is not None:
        sessions = sessions.filter(user_id=user_id)
    if chat_app_id is not None:
        sessions = sessions.filter(chat_app_id=chat_app_id)
    session = sessions.first()
    if session is None:
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID)
    return session


def sessions_for_user(*, user_id: str, chat_app_id: str | None, limit: int) -> list[ChatSession]:
    """A user's sessions, newest first (indexes chatsession_user_created / chatsession_user_app_created)."""
    sessions = ChatSession.objects.filter(user_id=user_id)
    if chat_app_id:
        sessions = sessions.filter(chat_app_id=chat_app_id)
    return list(sessions.order_by("-create_date")[:limit])


def session_messages(*, session: ChatSession, limit: int) -> list[ChatMessage]:
    """The newest `limit` messages, oldest first (CONTRACT §5; index chatmessage_session_time)."""
    newest = list(ChatMessage.objects.filter(session=session).order_by("-timestamp")[:limit])
    newest.reverse()
    return newest


def session_feedback(*, session: ChatSession) -> list[ChatSessionFeedback]:
    """A session's feedback, newest first (index feedback_session_created)."""
    return list(ChatSessionFeedback.objects.filter(session=session).order_by("-created_on"))


SESSION_SEARCH_TOKENS = "session-search"


@dataclass(frozen=True, slots=True)
class SessionSearch:
    user_id: str | None = None
    chat_app_id: str | None = None
    date_from: datetime | None = None
    date_to: datetime | None = None
    newest_first: bool = True


def sessions_search(*, search: SessionSearch, size: int, scroll_id: Any) -> tuple[list[ChatSession], int, str | None]:
    """A page of the admin session search, the total matching, and the next page's scrollId.

    Keyset pages on (create_date, session_id) so a session started meanwhile neither repeats nor
    skips rows; the token is signed and bound to the search it continues (a token replayed with
    other filters is a 400). Indexes: chatsession_user_created, chatsession_app_created, chatsession_created.
    """
    fingerprint = [search.user_id, search.chat_app_id, _iso_or_none(search.date_from), _iso_or_none(search.date_to), search.newest_first]
    position = decode_token(scroll_id, kind=SESSION_SEARCH_TOKENS, field="scrollId")
    if position is not None and position.get("search") != fingerprint:
        raise InvalidRequest("belongs to another search (its filters differ)", field="scrollId")
    sessions = ChatSession.objects.all()
    if search.user_id:
        sessions = sessions.filter(user_id=search.user_id)
    if search.chat_app_id:
        sessions = sessions.filter(chat_app_id=search.chat_app_id)
    if search.date_from is not None:
        sessions = sessions.filter(create_date__gte=search.date_from)
    if search.date_to is not None:
        sessions = sessions.filter(create_date__lt=search.date_to)
    total = sessions.count()
    if position is not None:
        created = datetime.fromisoformat(position["created"])
        after = uuid.UUID(position["id"])
        if search.newest_first:
            sessions = sessions.filter(Q(create_date__lt=created) | Q(create_date=created, session_id__lt=after))
        else:
            sessions = sessions.filter(Q(create_date__gt=created) | Q(create_date=created, session_id__gt=after))
    order = ("-create_date", "-session_id") if search.newest_first else ("create_date", "session_id")
    page = list(sessions.order_by(*order)[: size + 1])
    if len(page) <= size:
        return page, total, None
    page = page[:size]
    last = page[-1]
    token = encode_token(
        {"search": fingerprint, "created": last.create_date.isoformat(), "id": str(last.session_id)}, kind=SESSION_SEARCH_TOKENS
    )
    return page, total, token


def _iso_or_none(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


# --- files attached to messages (issue 21) ---------------------------------------------------------


def file_get(*, file_id: Any, user: ChatUser) -> ChatFile:
    """The user's own file; anyone else's, like an unknown id, is 404 NOT_FOUND (never readable)."""
    try:
        pk = uuid.UUID(str(file_id))
    except ValueError:
        raise NotFound(f"file {file_id} not found") from None
    file = ChatFile.objects.filter(pk=pk, user=user).first()
    if file is None:
        raise NotFound(f"file {file_id} not found")
    return file


def message_files(*, user: ChatUser, files: list[Any], features: dict[str, Any]) -> list[ChatFile]:
    """The stored files a converse body's `files` name, checked for the turn.

    `files` is the body's list of ChatMessageFile (only `fileId` is read; the rest is what the
    client was given at upload, and the stored record wins). `features` are the chat app's
    resolved features. 400 when upload is off there, an entry has no valid `fileId`, a file is
    named twice, or its type is no longer allowed; 404 NOT_FOUND for an unknown file or another
    user's. Returns them in the body's order; `ChatFile.as_message_file()` is what the message stores.
    """
    if not files:
        return []
    enabled, allowed = chat_files.file_upload_settings(features)
    if not enabled:
        raise InvalidRequest("file upload is not enabled in this chat app", field="files")
    ids: list[uuid.UUID] = []
    for index, entry in enumerate(files):
        raw = entry.get("fileId") if isinstance(entry, dict) else None
        try:
            ids.append(uuid.UUID(raw))
        except (ValueError, TypeError, AttributeError):  # not a string, or not a UUID
            raise InvalidRequest("must be the fileId of an uploaded file", field=f"files[{index}].fileId") from None
        if ids[-1] in ids[:-1]:
            raise InvalidRequest(f"names file {raw} a second time", field=f"files[{index}]")
    stored = {file.pk: file for file in ChatFile.objects.filter(pk__in=ids, user=user)}
    for index, pk in enumerate(ids):
        file = stored.get(pk)
        if file is None:
            raise NotFound(f"files[{index}]: file {pk} not found")
        if not chat_files.is_allowed(file.mime_type, allowed):
            raise InvalidRequest(f"{file.mime_type} files are not allowed in this chat app", field=f"files[{index}]")
    return [stored[pk] for pk in ids]


def file_content(file: ChatFile) -> bytes:
    """The file's bytes, from the `chat_files` storage."""
    with storages["chat_files"].open(file.storage_name, "rb") as stored:
        return stored.read()


def file_model_input(file: ChatFile) -> chat_files.ModelInput:
    """The file as a model receives it: text as text, images as image input (chat.files.ModelInput)."""
    return chat_files.model_input(file_name=file.name, mime_type=file.mime_type, content=file_content(file))
