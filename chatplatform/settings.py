"""Settings: every knob comes from an environment variable (CONTRACT §2) with an embedded default.

A malformed value stops start-up with an error naming the variable.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import environ
from django.core.exceptions import ImproperlyConfigured

from chatplatform.model_names import model_name_error

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

# NumPy's OpenBLAS (knowledge bases' vector search) starts a thread per core by default; beside a
# server's own threads they only wait on each other (docs/decisions.md). Read when NumPy is first
# imported, which is after the settings.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _malformed(name: str, rule: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"environment variable {name} is malformed: {rule}")


def _json_env(name: str, default: Any, kind: type) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise _malformed(name, f"not valid JSON ({exc.msg})") from None
    if not isinstance(value, kind):
        raise _malformed(name, f"must be a JSON {kind.__name__}")
    return value


def _bool_env(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise _malformed(name, "must be true or false")


def _int_env(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _malformed(name, "must be a whole number") from None
    if value < minimum:
        raise _malformed(name, f"must be at least {minimum}")
    return value


def _float_env(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise _malformed(name, "must be a number") from None
    if not 0 < value < float("inf"):
        raise _malformed(name, "must be a positive number")
    return value


def _url_env(name: str, schemes: set[str]) -> str | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in schemes or (parts.scheme not in {"sqlite"} and not parts.hostname):
        raise _malformed(name, f"must be a URL with scheme {' or '.join(sorted(schemes))} and a host")
    return raw


def _model_env(name: str, default: str) -> str:
    """A model name (CONTRACT §7): refused at start-up, not at the first turn that uses it."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    error = model_name_error(raw)
    if error is not None:
        raise _malformed(name, error)
    return raw


def _choice_env(name: str, default: str, choices: tuple[str, ...], *, upper: bool = False) -> str:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = raw.upper() if upper else raw.lower()
    if value not in choices:
        raise _malformed(name, f"{raw!r} must be one of {', '.join(choices)}")
    return value


WEBHOOK_EVENTS = ("session.created", "session.completed", "feedback.created", "insight.generated")


def _webhooks_env(name: str) -> list[dict[str, Any]]:
    """CHAT_WEBHOOKS (CONTRACT §9): `[{url, secret, events}]`. A message names the entry and the
    field, never a secret's value (start-up errors end up in logs)."""
    entries = _json_env(name, [], list)
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"[{index}]"
        if not isinstance(entry, dict):
            raise _malformed(name, f"{where} must be an object {{url, secret, events}}")
        unknown = sorted(set(entry) - {"url", "secret", "events"})
        if unknown:
            raise _malformed(name, f"{where}.{unknown[0]} is not a field of a webhook (url, secret, events)")
        url = entry.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in {"http", "https"} or not parts.hostname:
            raise _malformed(name, f"{where}.url must be an http or https URL with a host")
        if url in seen:
            raise _malformed(name, f"{where}.url repeats the url of [{seen[url]}]; list its events once")
        seen[url] = index
        if not isinstance(entry.get("secret"), str) or not entry["secret"].strip():
            raise _malformed(name, f"{where}.secret is required and must be a non-empty string")
        events = entry.get("events")
        if not isinstance(events, list) or not events:
            raise _malformed(name, f"{where}.events must be a non-empty list of {', '.join(WEBHOOK_EVENTS)}")
        for number, event in enumerate(events):
            if event not in WEBHOOK_EVENTS:
                raise _malformed(name, f"{where}.events[{number}] must be one of {', '.join(WEBHOOK_EVENTS)}")
        if len(set(events)) != len(events):
            raise _malformed(name, f"{where}.events lists an event more than once")
    return entries


# --- Django core -------------------------------------------------------------------------------

_DEV_SECRET = "dev-insecure-secret-key-change-me-0123456789abcdefghijklmnopqrstuvwxyz"
SECRET_KEY = os.environ.get("SECRET_KEY") or _DEV_SECRET
DEBUG = _bool_env("DEBUG", default=SECRET_KEY == _DEV_SECRET)
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h.strip()]
if SECRET_KEY == _DEV_SECRET and "pytest" not in sys.modules:
    sys.stderr.write("warning: SECRET_KEY is not set; using the development key. Never run like this in production.\n")

INSTALLED_APPS = [
    # `manage.py runserver` through Daphne, the whole ASGI application (CONTRACT §1). First, so its
    # runserver wins over staticfiles'; it imports Daphne only when that command runs.
    "chatplatform.devserver",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "servestatic.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_json_widget",
    "channels",
    "django_tasks",
    "django_tasks_db",
    "chatplatform",
    "tools",
    "tags",
    "directives",
    "knowledge",
    "agents",
    "chat",
]

MIDDLEWARE = [
    # Django's own, run on the event loop under ASGI (chatplatform/middleware.py says why).
    "chatplatform.middleware.Security",
    "chatplatform.middleware.StaticFiles",
    "chatplatform.middleware.Session",
    "chatplatform.middleware.Common",
    "chatplatform.middleware.Csrf",
    "chatplatform.middleware.Authentication",
    "chatplatform.middleware.Messages",
    "chatplatform.middleware.XFrameOptions",
]

# Django looks for its middleware by dotted name; chatplatform/checks.py runs those checks against ours.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]

ROOT_URLCONF = "chatplatform.urls"
ASGI_APPLICATION = "chatplatform.asgi.application"
AUTH_USER_MODEL = "chat.ChatUser"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# --- Database, cache, channel layer (CONTRACT §1: embedded defaults) ---------------------------

_database_url = _url_env("DATABASE_URL", {"postgres", "postgresql", "pgsql", "sqlite"})
# Connections the server closed are found and replaced (docs/faults.md). Off only to measure what
# the checks cost (bench/faults.py).
DATABASE_HEALTH_CHECKS = _bool_env("DATABASE_HEALTH_CHECKS", default=True)
if _database_url:
    try:
        DATABASES = {"default": env.db_url_config(_database_url)}
    except Exception as exc:  # django-environ raises several types for a bad URL
        raise _malformed("DATABASE_URL", str(exc)) from None
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Under ASGI each request to a sync view runs in a new thread, and Django's connections are
        # per thread: without a pool every request would open a PostgreSQL connection.
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": _int_env("DATABASE_POOL_MIN_SIZE", 2, minimum=0),
            "max_size": _int_env("DATABASE_POOL_MAX_SIZE", 20, minimum=1),
            "timeout": 10,
        }
        # The pool checks a connection before handing it out: one the server closed (a restart, a
        # failover) is replaced, not given to a request (chatplatform.db does the same for turns).
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = DATABASE_HEALTH_CHECKS
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Also for a `sqlite:///` DATABASE_URL. WAL lets readers proceed during a write and, with
    # synchronous=NORMAL, a commit does not wait for the disk. The timeout waits out short write
    # locks. IMMEDIATE: a transaction takes the write lock when it begins, so two read-then-write
    # transactions (select_for_update is a no-op on SQLite) queue instead of one failing with
    # "database is locked" (SQLITE_BUSY_SNAPSHOT, which no timeout waits out).
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        **DATABASES["default"].get("OPTIONS", {}),
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = _url_env("REDIS_URL", {"redis", "rediss", "unix"})
# A request that needs Redis fails fast (503) when Redis is down or frozen, rather than waiting on it.
REDIS_TIMEOUT_SECONDS = _float_env("REDIS_TIMEOUT_SECONDS", 1.0)
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "chatplatform.redis_cache.RedisCache",  # one client per process, not per request
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": REDIS_TIMEOUT_SECONDS, "socket_timeout": REDIS_TIMEOUT_SECONDS},
        }
    }
    # No read timeout here: the layer's receive blocks on Redis for seconds by design.
    _layer_host = {"address": REDIS_URL, "socket_connect_timeout": REDIS_TIMEOUT_SECONDS}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [_layer_host]}}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "chatplatform"}}
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Sessions, CSRF, security (CONTRACT §3) ----------------------------------------------------

SESSION_COOKIE_NAME = "session"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SECURE = not DEBUG
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]
X_FRAME_OPTIONS = "DENY"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

# --- Static files (ServeStatic, WhiteNoise's async fork: a sync middleware would send every ----
# --- request under ASGI, converse streams included, through a thread and back) -----------------

STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]  # the chat page's own assets and the vendored browser libraries
SERVESTATIC_USE_FINDERS = True
SERVESTATIC_AUTOREFRESH = DEBUG

# Files people attach to messages (issue 21): stored through Django's storage API, read back only
# by their owner through the Chat API (never served as public media). Local files by default; an
# S3-compatible bucket through django-storages when CHAT_FILES_S3_BUCKET is set.
CHAT_UPLOAD_MAX_BYTES = _int_env("CHAT_UPLOAD_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
_files_bucket = os.environ.get("CHAT_FILES_S3_BUCKET", "").strip()
if _files_bucket:
    _chat_files: dict[str, Any] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": _files_bucket,
            "location": os.environ.get("CHAT_FILES_S3_PREFIX", "chat-files").strip("/"),
            "endpoint_url": _url_env("CHAT_FILES_S3_ENDPOINT_URL", {"http", "https"}),
            "default_acl": None,
            "file_overwrite": False,
        },
    }
else:
    _chat_files = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": Path(os.environ.get("CHAT_FILES_ROOT") or BASE_DIR / "chat-files"), "base_url": None},
    }
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed names once `collectstatic` has run (immutable caching); plain names before.
    "staticfiles": {"BACKEND": "chatplatform.static.CollectedOrPlainStorage"},
    "chat_files": _chat_files,
    # Store-located web component scripts (issue 22): `<storeBucket>/<storeKey>`, in the database.
    "widget_store": {"BACKEND": "chatplatform.storage.DatabaseStorage"},
}


def _origins_env(name: str) -> list[str]:
    """Comma-separated origins (`scheme://host[:port]`), each as the browser writes it."""
    origins: list[str] = []
    for raw in os.environ.get(name, "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        parts = urlsplit(entry)
        # Anything more than an origin would be another CSP source (a path) or break the header.
        shaped = parts.scheme in {"http", "https"} and parts.hostname and parts.path in {"", "/"} and not (parts.query or parts.fragment)
        if not shaped or "@" in parts.netloc or any(ch in entry for ch in " ;'\""):
            raise _malformed(name, f"{entry!r} is not an origin: write scheme://host[:port] (http or https, no path)")
        try:
            port = parts.port
        except ValueError:
            raise _malformed(name, f"{entry!r} has an invalid port") from None
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
        if origin not in origins:
            origins.append(origin)
    return origins


# The widget runtime (issue 22, CONTRACT §13): origins web components may load from by `url`
# (the page's own origin is always allowed), and the folder of `custom-compiled-in` renderers.
CHAT_WIDGET_SCRIPT_ORIGINS = _origins_env("CHAT_WIDGET_SCRIPT_ORIGINS")
# Where `storeBucket`/`storeKey` are read: `database` (the `widget_store` storage, objects named
# `<bucket>/<key>`) or `s3` (each storeBucket an S3 bucket; AWS credentials from the standard variables).
CHAT_WIDGET_STORE = (os.environ.get("CHAT_WIDGET_STORE") or "database").strip()
if CHAT_WIDGET_STORE not in {"database", "s3"}:
    raise _malformed("CHAT_WIDGET_STORE", "must be database or s3")
CHAT_WIDGET_STORE_S3_ENDPOINT_URL = _url_env("CHAT_WIDGET_STORE_S3_ENDPOINT_URL", {"http", "https"})
_renderers_dir = os.environ.get("CHAT_WIDGET_RENDERERS_DIR", "").strip()
CHAT_WIDGET_RENDERERS_DIR = Path(_renderers_dir).resolve() if _renderers_dir else None
if CHAT_WIDGET_RENDERERS_DIR is not None and not CHAT_WIDGET_RENDERERS_DIR.is_dir():
    raise _malformed("CHAT_WIDGET_RENDERERS_DIR", f"{_renderers_dir!r} is not a folder")

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# --- REST framework and OpenAPI ----------------------------------------------------------------

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "chat.users.authentication.BearerJWTAuthentication",
        "chat.users.authentication.SessionCookieAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["chatplatform.api.bodies.JSONParser"],
    "EXCEPTION_HANDLER": "chatplatform.api.exceptions.handle",
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "chatplatform.api.negotiation.SingleRendererNegotiation",
    "DEFAULT_SCHEMA_CLASS": "chatplatform.api.schema.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Chat Agent Platform API",
    "DESCRIPTION": (
        "Chat API (`/api/chat`) for chat frontends and Admin API (`/api/chat-admin`) for operators. "
        "Every response is the envelope `{success, ...}`; failures are `{success: false, error, code?}`."
    ),
    "VERSION": "1.2.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/",
    "PREPROCESSING_HOOKS": ["chat.doors.schema.document_doors"],
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "chatplatform.api.schema.add_error_responses"],
}

# --- Identity (CONTRACT §2, §3) ----------------------------------------------------------------

JWT_SIGNING_KEY = os.environ.get("JWT_SIGNING_KEY") or SECRET_KEY
JWT_JWKS_URL = _url_env("JWT_JWKS_URL", {"http", "https"})
JWT_ISSUER = os.environ.get("JWT_ISSUER") or None
JWT_AUDIENCE = os.environ.get("JWT_AUDIENCE") or None
CHAT_ADMIN_ROLE = os.environ.get("CHAT_ADMIN_ROLE") or "chat-admin"

# Sign-in through an OpenID Connect provider (mozilla-django-oidc), when its variables are set.
# The provider's claims are mapped to the ChatUser exactly as a bearer token's (chat/oidc.py).
_OIDC_REQUIRED = ("OIDC_RP_CLIENT_ID", "OIDC_RP_CLIENT_SECRET", "OIDC_OP_AUTHORIZATION_ENDPOINT", "OIDC_OP_TOKEN_ENDPOINT")
OIDC_ENABLED = any(os.environ.get(name) for name in _OIDC_REQUIRED)
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
if OIDC_ENABLED:
    for _name in _OIDC_REQUIRED:
        if not os.environ.get(_name):
            raise _malformed(_name, "is required when any of " + ", ".join(_OIDC_REQUIRED) + " is set")
    OIDC_RP_CLIENT_ID = os.environ["OIDC_RP_CLIENT_ID"]
    OIDC_RP_CLIENT_SECRET = os.environ["OIDC_RP_CLIENT_SECRET"]
    OIDC_OP_AUTHORIZATION_ENDPOINT = _url_env("OIDC_OP_AUTHORIZATION_ENDPOINT", {"http", "https"})
    OIDC_OP_TOKEN_ENDPOINT = _url_env("OIDC_OP_TOKEN_ENDPOINT", {"http", "https"})
    OIDC_OP_USER_ENDPOINT = _url_env("OIDC_OP_USER_ENDPOINT", {"http", "https"})
    OIDC_OP_JWKS_ENDPOINT = _url_env("OIDC_OP_JWKS_ENDPOINT", {"http", "https"})
    OIDC_OP_ISSUER = os.environ.get("OIDC_OP_ISSUER") or None
    OIDC_RP_SIGN_ALGO = os.environ.get("OIDC_RP_SIGN_ALGO") or "RS256"
    if OIDC_RP_SIGN_ALGO != "HS256" and not OIDC_OP_JWKS_ENDPOINT:
        raise _malformed("OIDC_OP_JWKS_ENDPOINT", f"is required to verify {OIDC_RP_SIGN_ALGO} id tokens")
    OIDC_RP_SCOPES = os.environ.get("OIDC_RP_SCOPES") or "openid email profile"
    OIDC_USE_PKCE = _bool_env("OIDC_USE_PKCE", True)
    OIDC_TIMEOUT = 10
    OIDC_PROVIDER_NAME = os.environ.get("OIDC_PROVIDER_NAME") or "single sign-on"
    # RP-initiated logout: signing out here also ends the provider's session (its end_session_endpoint).
    OIDC_OP_LOGOUT_ENDPOINT = _url_env("OIDC_OP_LOGOUT_ENDPOINT", {"http", "https"})
    if OIDC_OP_LOGOUT_ENDPOINT:
        OIDC_STORE_ID_TOKEN = True
        OIDC_OP_LOGOUT_URL_METHOD = "chat.users.oidc.provider_logout_url"
    LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?oidc=failed"
    INSTALLED_APPS.append("mozilla_django_oidc")
    AUTHENTICATION_BACKENDS.append("chat.users.oidc.ClaimsBackend")

# --- Rate limits (CONTRACT §10): requests per window, per user (per address when anonymous) ----

CHAT_RATE_LIMIT_WINDOW_SECONDS = _int_env("CHAT_RATE_LIMIT_WINDOW_SECONDS", 60, minimum=1)
CHAT_RATE_LIMITS = {"chat": 100, "admin": 1000, "tagdef-admin": 100, "tagdef-chat": 1000}
_rate_overrides = _json_env("CHAT_RATE_LIMITS", {}, dict)
for _scope, _limit in _rate_overrides.items():
    if _scope not in CHAT_RATE_LIMITS or not isinstance(_limit, int) or _limit < 1:
        raise _malformed("CHAT_RATE_LIMITS", f"{_scope!r} must be one of {sorted(CHAT_RATE_LIMITS)} with a positive whole number")
    CHAT_RATE_LIMITS[_scope] = _limit

# --- The platform (CONTRACT §2) ----------------------------------------------------------------

CHAT_STAGE = os.environ.get("CHAT_STAGE") or "dev"
CHAT_COMPANY_NAME = os.environ.get("CHAT_COMPANY_NAME", "")
CHAT_DEFAULT_MODEL = _model_env("CHAT_DEFAULT_MODEL", "offline")
CHAT_VERIFICATION_MODEL = _model_env("CHAT_VERIFICATION_MODEL", CHAT_DEFAULT_MODEL)
CHAT_SELECTION_MODEL = _model_env("CHAT_SELECTION_MODEL", CHAT_DEFAULT_MODEL)
CHAT_TITLE_MODEL = _model_env("CHAT_TITLE_MODEL", CHAT_DEFAULT_MODEL)
CHAT_INSIGHTS_MODEL = _model_env("CHAT_INSIGHTS_MODEL", CHAT_DEFAULT_MODEL)
CHAT_SITE_FEATURES = _json_env("CHAT_SITE_FEATURES", {"promptInputFieldLabel": "Ask a question"}, dict)
CHAT_WEBHOOKS = _webhooks_env("CHAT_WEBHOOKS")
CHAT_MODEL_PRICES = _json_env(
    "CHAT_MODEL_PRICES",
    {
        "default": {"input": 0.0, "output": 0.0},
        "offline": {"input": 0.0, "output": 0.0},
        "openai:gpt-4o": {"input": 0.0025, "output": 0.01},
        "openai:gpt-4o-mini": {"input": 0.00015, "output": 0.0006},
        "anthropic:claude-sonnet-4-5": {"input": 0.003, "output": 0.015},
        "anthropic:claude-haiku-4-5": {"input": 0.001, "output": 0.005},
    },
    dict,
)
# Fractions are accepted (0.05 = 3 s), so that tests and demos need not wait a minute.
CHAT_SESSION_IDLE_MINUTES = _float_env("CHAT_SESSION_IDLE_MINUTES", 60.0)
CHAT_TAG_CACHE_SECONDS = _int_env("CHAT_TAG_CACHE_SECONDS", 300, minimum=0)
CHAT_SELECTION_TIMEOUT_SECONDS = _float_env("CHAT_SELECTION_TIMEOUT_SECONDS", 5.0)
# A model request fails when its first chunk takes longer than this, or a gap between chunks does
# (seconds; chatplatform.llm.loop). Connecting is bounded at 10 s.
CHAT_MODEL_FIRST_TOKEN_TIMEOUT = _float_env("CHAT_MODEL_FIRST_TOKEN_TIMEOUT", 60.0)
CHAT_MODEL_IDLE_TIMEOUT = _float_env("CHAT_MODEL_IDLE_TIMEOUT", 60.0)
# Milliseconds between the `offline` model's words: a demo then streams like a model (tests set 0).
CHAT_OFFLINE_TOKEN_DELAY_MS = _int_env("CHAT_OFFLINE_TOKEN_DELAY_MS", 20, minimum=0)
# Turns that may wait on one WebSocket behind the one running; more are refused at once (docs/faults.md).
CHAT_WS_MAX_QUEUED_TURNS = _int_env("CHAT_WS_MAX_QUEUED_TURNS", 10, minimum=1)
# How long a turn's events stay replayable after it ends (docs/api.md, "Events"); 0 keeps none in
# Redis (resume then reaches only the turns of the process a client reconnects to).
CHAT_STREAM_REPLAY_SECONDS = _int_env("CHAT_STREAM_REPLAY_SECONDS", 600, minimum=0)
# On SIGTERM, how long turns under way may go on before they are ended (chatplatform.server).
CHAT_SHUTDOWN_GRACE_SECONDS = _float_env("CHAT_SHUTDOWN_GRACE_SECONDS", 30.0)
# The bearer token a Prometheus scraper sends to /metrics; admins may read it without (chatplatform.metrics).
CHAT_METRICS_TOKEN = os.environ.get("CHAT_METRICS_TOKEN", "")
# Off: nothing is counted and /metrics is 404 (bench/metrics.py compares a turn with and without).
CHAT_METRICS_ENABLED = _bool_env("CHAT_METRICS_ENABLED", default=True)
# Tool execution: the sandbox of inline JavaScript tools, the largest result a tool may
# give the model (bytes of JSON), model round trips per turn, and how much of a call's arguments
# and result a trace keeps.
CHAT_INLINE_MEMORY_MB = _int_env("CHAT_INLINE_MEMORY_MB", 64, minimum=1)
CHAT_INLINE_STACK_KB = _int_env("CHAT_INLINE_STACK_KB", 1024, minimum=64)
CHAT_TOOL_RESULT_MAX_BYTES = _int_env("CHAT_TOOL_RESULT_MAX_BYTES", 262144, minimum=1024)
CHAT_TOOL_MAX_ROUND_TRIPS = _int_env("CHAT_TOOL_MAX_ROUND_TRIPS", 10, minimum=1)
CHAT_TOOL_TRACE_MAX_CHARS = _int_env("CHAT_TOOL_TRACE_MAX_CHARS", 2000, minimum=100)

# Knowledge bases (CONTRACT §11). The embedding model is `openai:<model>` or `bedrock:<model>`;
# unset, search is lexical only. Documents up to CHAT_KB_INLINE_INDEX_BYTES are indexed within the
# upload request, larger ones by the background task.
CHAT_EMBEDDING_MODEL = os.environ.get("CHAT_EMBEDDING_MODEL", "").strip() or None
if CHAT_EMBEDDING_MODEL is not None:
    _provider, _, _embedding_id = CHAT_EMBEDDING_MODEL.partition(":")
    if _provider not in {"openai", "bedrock"} or not _embedding_id.strip() or " " in _embedding_id:
        raise _malformed("CHAT_EMBEDDING_MODEL", "must be 'openai:<model>' or 'bedrock:<model>'")
CHAT_EMBEDDING_TIMEOUT_SECONDS = _float_env("CHAT_EMBEDDING_TIMEOUT_SECONDS", 30.0)
CHAT_KB_MAX_DOCUMENT_BYTES = _int_env("CHAT_KB_MAX_DOCUMENT_BYTES", 20 * 1024 * 1024, minimum=1)
CHAT_KB_INLINE_INDEX_BYTES = _int_env("CHAT_KB_INLINE_INDEX_BYTES", 1024 * 1024, minimum=0)
CHAT_KB_RETRIEVE_TIMEOUT_SECONDS = _float_env("CHAT_KB_RETRIEVE_TIMEOUT_SECONDS", 10.0)


# --- Background work (CONTRACT §1, issue 20): `manage.py run_worker` -------------------------------
# The database backend by default (nothing else to install); RQ on Redis when REDIS_URL is set.
# `immediate` runs a task inside the process that enqueues it (no worker; for experiments).
_TASK_BACKENDS = {
    "database": {"BACKEND": "django_tasks_db.DatabaseBackend"},
    "rq": {"BACKEND": "django_tasks_rq.RQBackend"},
    "immediate": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"},
}
CHAT_TASK_BACKEND = os.environ.get("CHAT_TASK_BACKEND") or ("rq" if REDIS_URL else "database")
if CHAT_TASK_BACKEND not in _TASK_BACKENDS:
    raise _malformed("CHAT_TASK_BACKEND", f"must be one of {', '.join(_TASK_BACKENDS)}")
if CHAT_TASK_BACKEND == "rq" and not REDIS_URL:
    raise _malformed("CHAT_TASK_BACKEND", "rq needs REDIS_URL")
TASKS = {"default": _TASK_BACKENDS[CHAT_TASK_BACKEND]}
if CHAT_TASK_BACKEND == "rq":
    # Its app (the RQ dashboard) imports redis and rq: only where RQ is the backend.
    INSTALLED_APPS.append("django_rq")
# django-rq's queue (the RQ backend's broker); the worker runs jobs in its own process, no fork.
RQ_QUEUES = {"default": {"URL": REDIS_URL or "redis://127.0.0.1:6379/0", "DEFAULT_TIMEOUT": 900}}
# How often an idle worker looks for due tasks, webhook deliveries and periodic jobs.
CHAT_WORKER_POLL_SECONDS = _float_env("CHAT_WORKER_POLL_SECONDS", 0.5)
# How often a worker says it lives; one silent for 3 heartbeats is taken for dead (its tasks requeued).
CHAT_WORKER_HEARTBEAT_SECONDS = _float_env("CHAT_WORKER_HEARTBEAT_SECONDS", 5.0)
# Failing tasks: CHAT_TASK_MAX_ATTEMPTS attempts, the n-th retry after CHAT_TASK_BACKOFF_SECONDS × 2^(n-1), ±25 %.
CHAT_TASK_MAX_ATTEMPTS = _int_env("CHAT_TASK_MAX_ATTEMPTS", 4, minimum=1)
CHAT_TASK_BACKOFF_SECONDS = _float_env("CHAT_TASK_BACKOFF_SECONDS", 10.0)
# Seconds between runs of each periodic job (a JSON object overrides some of them).
CHAT_PERIODIC_JOBS = {
    "complete_idle_sessions": 60.0,
    "recover_stalled_work": 60.0,
    "cleanup_mock_records": 86400.0,
    "prune_task_records": 86400.0,
    "expire_approvals": 60.0,
}
for _job, _seconds in _json_env("CHAT_PERIODIC_JOBS", {}, dict).items():
    if _job not in CHAT_PERIODIC_JOBS or isinstance(_seconds, bool) or not isinstance(_seconds, int | float) or _seconds <= 0:
        raise _malformed("CHAT_PERIODIC_JOBS", f"{_job!r} must be one of {sorted(CHAT_PERIODIC_JOBS)} with a positive number of seconds")
    CHAT_PERIODIC_JOBS[_job] = float(_seconds)
# Webhook deliveries (CONTRACT §9): the time limit of one attempt, the first retry's delay (doubled
# each time, ±25 %, at most an hour), how long a delivery is retried, and attempts in flight per worker.
CHAT_WEBHOOK_TIMEOUT_SECONDS = _float_env("CHAT_WEBHOOK_TIMEOUT_SECONDS", 10.0)
CHAT_WEBHOOK_BACKOFF_SECONDS = _float_env("CHAT_WEBHOOK_BACKOFF_SECONDS", 10.0)
CHAT_WEBHOOK_RETRY_HOURS = _float_env("CHAT_WEBHOOK_RETRY_HOURS", 24.0)
CHAT_WEBHOOK_CONCURRENCY = _int_env("CHAT_WEBHOOK_CONCURRENCY", 16, minimum=1)
# Session insights (CONTRACT §5): the time limit of one analysis by CHAT_INSIGHTS_MODEL.
CHAT_INSIGHTS_TIMEOUT_SECONDS = _float_env("CHAT_INSIGHTS_TIMEOUT_SECONDS", 120.0)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_LEVEL = _choice_env("LOG_LEVEL", "INFO", LOG_LEVELS, upper=True)
# `json`: one JSON object a line (python-json-logger), for log collectors; `text` for people.
LOG_FORMAT = _choice_env("LOG_FORMAT", "text", ("text", "json"))
_LOG_FORMATTERS = {
    "text": {"format": "%(message)s"},
    "json": {
        "()": "pythonjsonlogger.json.JsonFormatter",
        "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
        "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
    },
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"default": _LOG_FORMATTERS[LOG_FORMAT]},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "default"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's own console handler would print every record a second time through the root.
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        # The HTTP clients of the model SDKs log every request at INFO.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

# --- Bounded work: what a stored object, an upload, a rule or a sign-in attempt may cost ---------
# (docs/deploy.md, "Limits on hostile input")
# A web component script from the store, decoded: larger is refused (400 when stored, 502 when served).
CHAT_WIDGET_SCRIPT_MAX_BYTES = _int_env("CHAT_WIDGET_SCRIPT_MAX_BYTES", 5 * 1024 * 1024, minimum=1024)
# Knowledge base documents are parsed in a child process with these limits; past one the
# document is `failed` with the reason: its text, its pages (PDF), the decompressed bytes of
# its streams (PDF), the parse's wall-clock time and the child's address space.
CHAT_KB_MAX_TEXT_CHARS = _int_env("CHAT_KB_MAX_TEXT_CHARS", 10_000_000, minimum=1000)
CHAT_KB_MAX_PAGES = _int_env("CHAT_KB_MAX_PAGES", 2000, minimum=1)
CHAT_KB_MAX_DECOMPRESSED_BYTES = _int_env("CHAT_KB_MAX_DECOMPRESSED_BYTES", 50 * 1024 * 1024, minimum=1024)
CHAT_KB_PARSE_SECONDS = _float_env("CHAT_KB_PARSE_SECONDS", 60.0)
CHAT_KB_PARSE_MEMORY_MB = _int_env("CHAT_KB_PARSE_MEMORY_MB", 1024, minimum=64)
# An access rule's condition with a comprehension may run this long; past it the rules deny.
CHAT_ACCESS_RULE_BUDGET_MS = _int_env("CHAT_ACCESS_RULE_BUDGET_MS", 100, minimum=1)
# Sign-in (/accounts/login/, /admin/login/): failed attempts per username and per client address
# within the window, after which sign-in is refused (429) until the window ends.
CHAT_SIGNIN_MAX_FAILURES_PER_USER = _int_env("CHAT_SIGNIN_MAX_FAILURES_PER_USER", 10, minimum=1)
CHAT_SIGNIN_MAX_FAILURES_PER_ADDRESS = _int_env("CHAT_SIGNIN_MAX_FAILURES_PER_ADDRESS", 50, minimum=1)
CHAT_SIGNIN_WINDOW_SECONDS = _int_env("CHAT_SIGNIN_WINDOW_SECONDS", 900, minimum=1)
# Refuses sign-in POSTs once a username or address is locked out (chatplatform.signin). Last: it
# reads the form only for those two paths, after the session and CSRF middleware set up the request.
MIDDLEWARE = [*MIDDLEWARE, "chatplatform.signin.SignInThrottle"]
# A Content-Security-Policy on the Django admin's pages (chatplatform.middleware).
MIDDLEWARE.append("chatplatform.middleware.AdminContentSecurityPolicy")
