"""The browser's pages (README.md, "The chat page"): sign-in, the home page and the chat page.

Django templates (templates/chat/) rendered with what the page needs at its first paint: the chat
app, its resolved features (docs/api.md, "Features"), the user, and the session a link names. Everything after
that (sessions, messages, turns, feedback, files) the page's script does through the Chat API and
the WebSocket, as any other frontend would. Each page carries a Content-Security-Policy: model
output is sanitized before it reaches the DOM, and the policy is the second wall.
"""

from __future__ import annotations

import random
import secrets
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.csrf import get_token
from django.shortcuts import render

from chat.chat_apps.features import is_enabled
from chat.chat_apps.models import ChatApp
from chat.chat_apps.selectors import chat_app_features, chat_app_for_use, chat_apps_for_user
from chat.feedback.models import FeedbackType
from chat.files.content import file_upload_settings
from chat.sessions.selectors import session_get
from chat.shares.models import SessionShare
from chat.users.authentication import signed_in
from chat.users.models import ChatUser
from chat.widgets import services as widgets
from chatplatform.api.errors import ApiError
from tags.selectors import tags_usable_by
from tags.serializers import render_many

DEFAULT_INPUT_LABEL = "Message"  # docs/api.md, "Features": the input's accessible name when the feature is off or empty


def page_csp(nonce: str) -> str:
    """The pages' Content-Security-Policy: scripts from this origin, the inline import map (by
    nonce) and the origins of CHAT_WIDGET_SCRIPT_ORIGINS only (web components by `url`,
    docs/widgets.md); styles from this origin; no plugin, no framing, no image from elsewhere (a model's
    Markdown image pointing at another host would report who reads the answer)."""
    return "; ".join(
        [
            "default-src 'self'",
            " ".join(["script-src 'self'", f"'nonce-{nonce}'", *settings.CHAT_WIDGET_SCRIPT_ORIGINS]),
            "style-src 'self'",
            "img-src 'self' data: blob:",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
            f"form-action 'self'{_provider_logout_origin()}",
        ]
    )


def _provider_logout_origin() -> str:
    """Signing out redirects the form to the OpenID provider's logout endpoint when there is one
    (chat.oidc): browsers hold form-action to the redirect's target too."""
    endpoint = getattr(settings, "OIDC_OP_LOGOUT_ENDPOINT", None) if settings.OIDC_ENABLED else None
    if not endpoint:
        return ""
    parts = urlsplit(endpoint)
    return f" {parts.scheme}://{parts.netloc}"


THEMES = ("light", "dark")  # a person's `theme` pref (docs/api.md, "The chat page"); absent: the system's


def _theme(request: HttpRequest) -> str | None:
    """The theme the person chose, rendered on <html> so the first paint has it (no flash of the other)."""
    prefs = getattr(request.user, "prefs", None) if request.user.is_authenticated else None
    theme = prefs.get("theme") if isinstance(prefs, dict) else None
    return theme if theme in THEMES else None


def _render(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    nonce = secrets.token_urlsafe(16)
    response = render(request, template, {**context, "csp_nonce": nonce, "theme": _theme(request)}, status=status)
    response["Content-Security-Policy"] = page_csp(nonce)
    return response


class SignInView(auth_views.LoginView):
    """`/accounts/login/` in the platform's own look (fields `username`, `password`), with the
    OpenID Connect provider's button when one is configured."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["oidc_provider"] = settings.OIDC_PROVIDER_NAME if settings.OIDC_ENABLED else None
        context["oidc_failed"] = self.request.GET.get("oidc") == "failed"
        context["csp_nonce"] = self.nonce
        return context

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        self.nonce = secrets.token_urlsafe(16)
        response = super().dispatch(request, *args, **kwargs)
        response["Content-Security-Policy"] = page_csp(self.nonce)
        return response


def _display_name(user: ChatUser) -> str:
    return " ".join(part for part in (user.first_name, user.last_name) if part) or user.user_id


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """`/`: the chat apps this user may use (the home-page rule of GET /api/chat/chat-apps)."""
    user = signed_in(request)
    apps = chat_apps_for_user(user=user, for_home_page=True)
    return _render(request, "chat/home.html", {"apps": apps, "user_name": _display_name(user)})


def _text_feature(features: dict[str, Any], name: str) -> str:
    """A text feature (docs/api.md, "Features"): a plain string, or `{enabled, <name>}`; "" when off or empty.
    `chatDisclaimerNotice` keeps its text under `notice`."""
    value = features.get(name)
    if isinstance(value, str):
        return value.strip()
    if not isinstance(value, dict) or value.get("enabled") is False:
        return ""
    text = value.get(name) or value.get("notice") or ""
    return text.strip() if isinstance(text, str) else ""


def _suggestions(features: dict[str, Any]) -> list[str]:
    if not is_enabled(features, "suggestions"):
        return []
    feature = features["suggestions"]
    items = [item for item in feature.get("suggestions") or [] if isinstance(item, str) and item.strip()]
    if feature.get("randomize") is True:
        items = random.sample(items, len(items))
    shown = feature.get("maxToShow")
    return items[:shown] if isinstance(shown, int) and shown > 0 else items


def page_settings(app: ChatApp, features: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of a chat app's features, decided once here for the template and the script."""
    uploads, mime_types = file_upload_settings(features)
    custom = features["uiCustomization"] if is_enabled(features, "uiCustomization") else {}
    # The sign-out button shows unless the chat app turns it off (a host application signs people out).
    logout = features.get("logout")
    return {
        "title": (custom.get("title") or "").strip() or app.title,
        "accentColor": custom.get("accentColor") or None,
        "inputLabel": _text_feature(features, "promptInputFieldLabel") or DEFAULT_INPUT_LABEL,
        "disclaimer": _text_feature(features, "chatDisclaimerNotice"),
        "suggestions": _suggestions(features),
        "traces": is_enabled(features, "traces"),
        "verifyResponse": is_enabled(features, "verifyResponse"),
        "fileUpload": uploads,
        "mimeTypesAllowed": list(mime_types),
        "logout": not (isinstance(logout, dict) and logout.get("enabled") is False),
    }


def _widgets_config(app: ChatApp) -> dict[str, Any]:
    """`config.widgets` (docs/widgets.md): the tags this chat app may use (none when its `tags`
    feature is off), and where their scripts, renderers and data live."""
    usable = tags_usable_by(site_features=settings.CHAT_SITE_FEATURES, app_features=app.features or {})
    return widgets.page_config(usable, render_many(usable, include_instructions=False))


def widget_renderer(request: HttpRequest, name: str) -> FileResponse:
    """`/widgets/renderers/<scope>.<tag>.js`: a module of CHAT_WIDGET_RENDERERS_DIR. Deployment
    code, public as the page's own static files are."""
    path = widgets.renderer_file(name)
    if path is None:
        raise Http404("no such renderer")
    response = FileResponse(path.open("rb"), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=300"
    return response


@login_required
def chat_page(request: HttpRequest, chat_app_id: str, session_id: str | None = None) -> HttpResponse:
    """`/chat/<chatAppId>/` and `/chat/<chatAppId>/<sessionId>`: a reload or a shared link reopens
    the session, for its owner. Anyone else's session (or an unknown one) opens an empty chat that
    says it was not found, with nothing of that session."""
    user = signed_in(request)
    try:
        app = chat_app_for_use(chat_app_id=chat_app_id, user=user)
    except ApiError as exc:
        context = {"status": exc.status_code, "chat_app_id": chat_app_id, "user_name": _display_name(user)}
        return _render(request, "chat/unavailable.html", context, status=exc.status_code)
    session = None
    if session_id is not None:
        try:
            session = session_get(session_id=session_id, user_id=user.pk, chat_app_id=app.pk)
        except ApiError:
            session = None
    shown = page_settings(app, chat_app_features(app))
    config = {
        "chatAppId": app.pk,
        "agentId": app.agent_id,
        "features": shown,
        # The prefs ride with the page: the spotlight orders its cards without a request first.
        "user": {"userId": user.pk, "name": _display_name(user), "prefs": user.prefs or {}},
        "sessionId": str(session.pk) if session else None,
        "csrfToken": get_token(request),
        "uploadMaxBytes": settings.CHAT_UPLOAD_MAX_BYTES,
        "feedbackTypes": {"up": FeedbackType.USER_THUMBS_UP.value, "down": FeedbackType.USER_THUMBS_DOWN.value},
        "widgets": _widgets_config(app),
    }
    context = {
        "app": app,
        "page": shown,
        "config": config,
        "session": session,
        "session_missing": session_id is not None and session is None,
        "user_name": _display_name(user),
    }
    return _render(request, "chat/page.html", context, status=404 if context["session_missing"] else 200)


@login_required
def shared_page(request: HttpRequest, share_id: str) -> HttpResponse:
    """`/shared/<shareId>`: a shared conversation, read-only, for anyone signed in (docs/api.md, "Share links").
    Its script (static/chat/shared.js) draws the answers' Markdown; widget tags stay inert, with no chat app's widgets."""
    share = SessionShare.objects.select_related("session").filter(pk=share_id).first()
    if share is None:
        raise Http404("no such shared conversation")
    return _render(request, "chat/shared.html", {"share": share, "user_name": _display_name(signed_in(request))})
