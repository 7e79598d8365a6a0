"""URL map: the Chat API, the Admin API, the OpenAPI docs, the Django admin, sign-in and the chat pages."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views import View
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny

from chatplatform import inflight
from chatplatform.api.views import ApiView, UnknownPathView
from chatplatform.metrics import metrics_view


@extend_schema(exclude=True)
class SchemaView(ApiView, SpectacularAPIView):
    permission_classes = [AllowAny]


@extend_schema(exclude=True)
class DocsView(ApiView, SpectacularSwaggerView):
    permission_classes = [AllowAny]


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers. Nothing else is checked (a dependency down is not a reason to restart)."""
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database and the cache answer, and the process is not draining; 503 otherwise."""
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:
        checks["database"] = f"unavailable: {type(exc).__name__}"
    try:
        cache.get("readyz")
        checks["cache"] = "ok"
    except Exception as exc:
        checks["cache"] = f"unavailable: {type(exc).__name__}"
    checks["accepting"] = "ok" if inflight.accepting() else "draining"
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)


# Each resource app's urls.py lists its paths (docs/api.md) in `chat_urlpatterns` (under /api/chat/)
# and `admin_urlpatterns` (under /api/chat-admin/).
_API_APPS = ["chat", "agents", "tools", "tags", "directives", "knowledge"]
chat_api = [p for app in _API_APPS for p in getattr(import_module(f"{app}.urls"), "chat_urlpatterns", [])]
admin_api = [p for app in _API_APPS for p in getattr(import_module(f"{app}.urls"), "admin_urlpatterns", [])]
# The browser's pages (the chat page, sign-in) from the apps that have them, at the root.
pages = [p for app in _API_APPS for p in getattr(import_module(f"{app}.urls"), "page_urlpatterns", [])]
# The protocol doors (docs/doors.md): OpenAI's paths under /v1/, and the others'.
doors = [p for app in _API_APPS for p in getattr(import_module(f"{app}.urls"), "door_urlpatterns", [])]


def _sign_out_view() -> type[View[Any]]:
    """With OIDC, mozilla-django-oidc's, which also ends the provider's session when
    OIDC_OP_LOGOUT_ENDPOINT is set (chat.oidc.provider_logout_url)."""
    if settings.OIDC_ENABLED:
        from mozilla_django_oidc.views import OIDCLogoutView

        return OIDCLogoutView
    return auth_views.LogoutView


urlpatterns = [
    path("api/chat/", include(chat_api)),
    path("api/chat-admin/", include(admin_api)),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", DocsView.as_view(url_name="schema"), name="docs"),
    re_path(r"^api(?:/.*)?$", UnknownPathView.as_view()),
    *doors,
    path("admin/", admin.site.urls),
    path("accounts/logout/", _sign_out_view().as_view(), name="logout"),
    path("healthz", healthz),
    path("readyz", readyz),
    path("metrics", metrics_view),
    *pages,
]
if settings.OIDC_ENABLED:
    urlpatterns.append(path("oidc/", include("mozilla_django_oidc.urls")))
