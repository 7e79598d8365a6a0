"""Reads on chat apps: who may use which, and their resolved features."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from agents.models import TestType
from chat.chat_apps.features import resolve_features
from chat.chat_apps.models import ApplyRulesAs, ChatApp
from chat.users.models import ChatUser
from chatplatform.api.errors import Code, NotFound, PermissionDenied


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
    """Whether `user` may use `app` (docs/api.md, "Chat apps"; converse answers 403 when not).

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
    """The features in force in a chat app: the site's and the app's, resolved (docs/api.md, "Features")."""
    return resolve_features(site=settings.CHAT_SITE_FEATURES, app=app.features or {})
