"""Settings: every knob is an environment variable with an embedded default (README "Configuration").

Each is read through chatplatform.env, which refuses a malformed value naming the variable.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from chatplatform.env import (
    env_bool,
    env_choice,
    env_database,
    env_embedding_model,
    env_float,
    env_folder,
    env_int,
    env_json,
    env_limits,
    env_list,
    env_model,
    env_optional_int,
    env_origins,
    env_path,
    env_seconds,
    env_str,
    env_url,
    env_webhooks,
    malformed,
)
from chatplatform.safety import DEV_SECRET_KEY, unsafe_setting

BASE_DIR = Path(__file__).resolve().parent.parent

# NumPy's OpenBLAS (knowledge bases' vector search) starts a thread per core by default; beside a
# server's own threads they only wait on each other (docs/decisions.md). Read when NumPy is first
# imported, which is after the settings.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# --- Django core -------------------------------------------------------------------------------

# Unset, the development key and DEBUG on (`make run`); with DEBUG off a process refuses to start
# on it (chatplatform.safety, docs/deploy.md).
SECRET_KEY = env_str("SECRET_KEY", DEV_SECRET_KEY)
DEBUG = env_bool("DEBUG", default=SECRET_KEY == DEV_SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
if SECRET_KEY == DEV_SECRET_KEY and DEBUG and "pytest" not in sys.modules:
    sys.stderr.write("warning: SECRET_KEY is not set; using the development key. Never run like this in production.\n")

INSTALLED_APPS = [
    # `manage.py runserver` through Daphne, the whole ASGI application (README). First, so its
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

# --- Database, cache, channel layer (embedded defaults unless set) ------------------------------

# Connections the server closed are found and replaced (docs/faults.md). Off only to measure what
# the checks cost (bench/faults.py).
DATABASE_HEALTH_CHECKS = env_bool("DATABASE_HEALTH_CHECKS", default=True)
_database = env_database("DATABASE_URL")
if _database:
    DATABASES = {"default": _database}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Under ASGI each request to a sync view runs in a new thread, and Django's connections are
        # per thread: without a pool every request would open a PostgreSQL connection.
        DATABASES["default"]["CONN_MAX_AGE"] = 0
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": env_int("DATABASE_POOL_MIN_SIZE", 2, minimum=0),
            "max_size": env_int("DATABASE_POOL_MAX_SIZE", 20, minimum=1),
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

REDIS_URL = env_url("REDIS_URL", {"redis", "rediss", "unix"})
# A request that needs Redis fails fast (503) when Redis is down or frozen, rather than waiting on it.
REDIS_TIMEOUT_SECONDS = env_float("REDIS_TIMEOUT_SECONDS", 1.0)
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

# --- Sessions, CSRF, security (docs/api.md "Authentication", docs/deploy.md "TLS") -------------

SESSION_COOKIE_NAME = "session"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SECURE = not DEBUG
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
X_FRAME_OPTIONS = "DENY"
# Behind a TLS proxy (docs/deploy.md): plain-HTTP requests redirected to HTTPS, except the probes
# and the scraper that call a process directly; HSTS once HTTPS works for the host.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=False)
SECURE_REDIRECT_EXEMPT = [r"^(healthz|readyz|metrics)$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

# --- Static files (ServeStatic, WhiteNoise's async fork: a sync middleware would send every ----
# --- request under ASGI, converse streams included, through a thread and back) -----------------

STATIC_URL = "/static/"
STATIC_ROOT = env_path("STATIC_ROOT", BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "static"]  # the chat page's own assets and the vendored browser libraries
SERVESTATIC_USE_FINDERS = True
SERVESTATIC_AUTOREFRESH = DEBUG

# Files people attach to messages (docs/api.md "Files attached to messages"): stored through
# Django's storage API, read back only by their owner through the Chat API (never served as public
# media). Local files by default; an S3-compatible bucket through django-storages when
# CHAT_FILES_S3_BUCKET is set.
CHAT_UPLOAD_MAX_BYTES = env_int("CHAT_UPLOAD_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
_files_bucket = env_str("CHAT_FILES_S3_BUCKET", None)
if _files_bucket:
    _chat_files: dict[str, Any] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": _files_bucket,
            "location": env_str("CHAT_FILES_S3_PREFIX", "chat-files").strip("/"),
            "endpoint_url": env_url("CHAT_FILES_S3_ENDPOINT_URL", {"http", "https"}),
            "default_acl": None,
            "file_overwrite": False,
        },
    }
else:
    _chat_files = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": env_path("CHAT_FILES_ROOT", BASE_DIR / "chat-files"), "base_url": None},
    }
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed names once `collectstatic` has run (immutable caching); plain names before.
    "staticfiles": {"BACKEND": "chatplatform.static.CollectedOrPlainStorage"},
    "chat_files": _chat_files,
    # Store-located web component scripts (docs/widgets.md): `<storeBucket>/<storeKey>`, in the database.
    "widget_store": {"BACKEND": "chatplatform.storage.DatabaseStorage"},
}


# The widget runtime (docs/widgets.md): origins web components may load from by `url` (the page's
# own origin is always allowed), and the folder of `custom-compiled-in` renderers.
CHAT_WIDGET_SCRIPT_ORIGINS = env_origins("CHAT_WIDGET_SCRIPT_ORIGINS")
# Where `storeBucket`/`storeKey` are read: `database` (the `widget_store` storage, objects named
# `<bucket>/<key>`) or `s3` (each storeBucket an S3 bucket; AWS credentials from the standard variables).
CHAT_WIDGET_STORE = env_choice("CHAT_WIDGET_STORE", "database", ("database", "s3"))
CHAT_WIDGET_STORE_S3_ENDPOINT_URL = env_url("CHAT_WIDGET_STORE_S3_ENDPOINT_URL", {"http", "https"})
CHAT_WIDGET_RENDERERS_DIR = env_folder("CHAT_WIDGET_RENDERERS_DIR")

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
    "DEFAULT_SCHEMA_CLASS": "chatplatform.api.autoschema.AutoSchema",
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
    # `check --deploy` is about the deployment; the schema is checked by the suite (tests/chatplatform/test_openapi.py).
    "ENABLE_DJANGO_DEPLOY_CHECK": False,
}

# --- Identity (docs/api.md "Authentication") ---------------------------------------------------

JWT_SIGNING_KEY = env_str("JWT_SIGNING_KEY", SECRET_KEY)
JWT_JWKS_URL = env_url("JWT_JWKS_URL", {"http", "https"})
JWT_ISSUER = env_str("JWT_ISSUER", None)
JWT_AUDIENCE = env_str("JWT_AUDIENCE", None)
CHAT_ADMIN_ROLE = env_str("CHAT_ADMIN_ROLE", "chat-admin")
# Why these settings must not serve (a public signing key with DEBUG off); None when they may.
# Read by every way a process starts (chatplatform.safety).
UNSAFE_SETTING = unsafe_setting(debug=DEBUG, secret_key=SECRET_KEY, jwt_signing_key=JWT_SIGNING_KEY)

# Sign-in through an OpenID Connect provider (mozilla-django-oidc), when its variables are set.
# The provider's claims are mapped to the ChatUser exactly as a bearer token's (chat/oidc.py).
_OIDC_REQUIRED = ("OIDC_RP_CLIENT_ID", "OIDC_RP_CLIENT_SECRET", "OIDC_OP_AUTHORIZATION_ENDPOINT", "OIDC_OP_TOKEN_ENDPOINT")
_oidc_required = {name: env_str(name, None) for name in _OIDC_REQUIRED}
OIDC_ENABLED = any(_oidc_required.values())
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"]
if OIDC_ENABLED:
    for _name, _value in _oidc_required.items():
        if _value is None:
            raise malformed(_name, "is required when any of " + ", ".join(_OIDC_REQUIRED) + " is set")
    OIDC_RP_CLIENT_ID = _oidc_required["OIDC_RP_CLIENT_ID"]
    OIDC_RP_CLIENT_SECRET = _oidc_required["OIDC_RP_CLIENT_SECRET"]
    OIDC_OP_AUTHORIZATION_ENDPOINT = env_url("OIDC_OP_AUTHORIZATION_ENDPOINT", {"http", "https"})
    OIDC_OP_TOKEN_ENDPOINT = env_url("OIDC_OP_TOKEN_ENDPOINT", {"http", "https"})
    OIDC_OP_USER_ENDPOINT = env_url("OIDC_OP_USER_ENDPOINT", {"http", "https"})
    OIDC_OP_JWKS_ENDPOINT = env_url("OIDC_OP_JWKS_ENDPOINT", {"http", "https"})
    OIDC_OP_ISSUER = env_str("OIDC_OP_ISSUER", None)
    OIDC_RP_SIGN_ALGO = env_str("OIDC_RP_SIGN_ALGO", "RS256")
    if OIDC_RP_SIGN_ALGO != "HS256" and not OIDC_OP_JWKS_ENDPOINT:
        raise malformed("OIDC_OP_JWKS_ENDPOINT", f"is required to verify {OIDC_RP_SIGN_ALGO} id tokens")
    OIDC_RP_SCOPES = env_str("OIDC_RP_SCOPES", "openid email profile")
    OIDC_USE_PKCE = env_bool("OIDC_USE_PKCE", True)
    OIDC_TIMEOUT = 10
    OIDC_PROVIDER_NAME = env_str("OIDC_PROVIDER_NAME", "single sign-on")
    # RP-initiated logout: signing out here also ends the provider's session (its end_session_endpoint).
    OIDC_OP_LOGOUT_ENDPOINT = env_url("OIDC_OP_LOGOUT_ENDPOINT", {"http", "https"})
    if OIDC_OP_LOGOUT_ENDPOINT:
        OIDC_STORE_ID_TOKEN = True
        OIDC_OP_LOGOUT_URL_METHOD = "chat.users.oidc.provider_logout_url"
    LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?oidc=failed"
    INSTALLED_APPS.append("mozilla_django_oidc")
    AUTHENTICATION_BACKENDS.append("chat.users.oidc.ClaimsBackend")

# --- Rate limits (docs/api.md "Rate limits"): requests per window, per user (per address when anonymous)

CHAT_RATE_LIMIT_WINDOW_SECONDS = env_int("CHAT_RATE_LIMIT_WINDOW_SECONDS", 60, minimum=1)
CHAT_RATE_LIMITS = env_limits("CHAT_RATE_LIMITS", {"chat": 100, "admin": 1000, "tagdef-admin": 100, "tagdef-chat": 1000})

# --- The server's connections (chatplatform.connections, docs/deploy.md "Connections") ----------
# An idle connection is closed after CHAT_KEEP_ALIVE_SECONDS (before its first request too); a
# request head must arrive whole within CHAT_REQUEST_HEAD_TIMEOUT_SECONDS of its first byte, in at
# most CHAT_REQUEST_HEAD_MAX_BYTES and CHAT_REQUEST_HEAD_MAX_FIELDS header lines (431 otherwise).
CHAT_KEEP_ALIVE_SECONDS = env_float("CHAT_KEEP_ALIVE_SECONDS", 5.0)
CHAT_REQUEST_HEAD_TIMEOUT_SECONDS = env_float("CHAT_REQUEST_HEAD_TIMEOUT_SECONDS", 10.0)
CHAT_REQUEST_HEAD_MAX_BYTES = env_int("CHAT_REQUEST_HEAD_MAX_BYTES", 64 * 1024, minimum=1024)
CHAT_REQUEST_HEAD_MAX_FIELDS = env_int("CHAT_REQUEST_HEAD_MAX_FIELDS", 100, minimum=10)

# --- The model providers' standard variables (read here, used by chatplatform.llm and .embeddings)

OPENAI_BASE_URL = env_url("OPENAI_BASE_URL", {"http", "https"})
OPENAI_API_KEY = env_str("OPENAI_API_KEY", None)
ANTHROPIC_BASE_URL = env_url("ANTHROPIC_BASE_URL", {"http", "https"})
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY", None)

# --- The platform (README "Configuration") -----------------------------------------------------

CHAT_STAGE = env_str("CHAT_STAGE", "dev")
CHAT_COMPANY_NAME = env_str("CHAT_COMPANY_NAME", "")
CHAT_DEFAULT_MODEL = env_model("CHAT_DEFAULT_MODEL", "offline")
CHAT_VERIFICATION_MODEL = env_model("CHAT_VERIFICATION_MODEL", CHAT_DEFAULT_MODEL)
CHAT_SELECTION_MODEL = env_model("CHAT_SELECTION_MODEL", CHAT_DEFAULT_MODEL)
CHAT_TITLE_MODEL = env_model("CHAT_TITLE_MODEL", CHAT_DEFAULT_MODEL)
CHAT_INSIGHTS_MODEL = env_model("CHAT_INSIGHTS_MODEL", CHAT_DEFAULT_MODEL)
CHAT_SITE_FEATURES = env_json("CHAT_SITE_FEATURES", {"promptInputFieldLabel": "Ask a question"}, dict)
CHAT_WEBHOOKS = env_webhooks("CHAT_WEBHOOKS")
CHAT_MODEL_PRICES = env_json(
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
CHAT_SESSION_IDLE_MINUTES = env_float("CHAT_SESSION_IDLE_MINUTES", 60.0)
CHAT_TAG_CACHE_SECONDS = env_int("CHAT_TAG_CACHE_SECONDS", 300, minimum=0)
CHAT_SELECTION_TIMEOUT_SECONDS = env_float("CHAT_SELECTION_TIMEOUT_SECONDS", 5.0)
# A model request fails when its first chunk takes longer than this, or a gap between chunks does
# (seconds; chatplatform.llm.loop). Connecting is bounded at 10 s.
CHAT_MODEL_FIRST_TOKEN_TIMEOUT = env_float("CHAT_MODEL_FIRST_TOKEN_TIMEOUT", 60.0)
CHAT_MODEL_IDLE_TIMEOUT = env_float("CHAT_MODEL_IDLE_TIMEOUT", 60.0)
# Milliseconds between the `offline` model's words: a demo then streams like a model (tests set 0).
CHAT_OFFLINE_TOKEN_DELAY_MS = env_int("CHAT_OFFLINE_TOKEN_DELAY_MS", 20, minimum=0)
# Turns that may wait on one WebSocket behind the one running; more are refused at once (docs/faults.md).
CHAT_WS_MAX_QUEUED_TURNS = env_int("CHAT_WS_MAX_QUEUED_TURNS", 10, minimum=1)
# How long a turn's events stay replayable after it ends (docs/api.md, "Events"); 0 keeps none in
# Redis (resume then reaches only the turns of the process a client reconnects to).
CHAT_STREAM_REPLAY_SECONDS = env_int("CHAT_STREAM_REPLAY_SECONDS", 600, minimum=0)
# How long a turn waits for an AG-UI client's result of its frontend tool's call (docs/doors.md, "AG-UI").
CHAT_CLIENT_TOOL_SECONDS = env_int("CHAT_CLIENT_TOOL_SECONDS", 300, minimum=1)
# Days a session is kept after its last message, for chat apps without retentionDays; unset: kept (docs/data.md).
CHAT_RETENTION_DAYS = env_optional_int("CHAT_RETENTION_DAYS", minimum=1)
# A server process loads what its first turn would before it listens (docs/decisions.md, "Warm
# start"); off, it listens about a second sooner and its first turns pay that instead.
CHAT_WARM_START = env_bool("CHAT_WARM_START", default=True)
# On SIGTERM, how long turns under way may go on before they are ended (chatplatform.server).
CHAT_SHUTDOWN_GRACE_SECONDS = env_float("CHAT_SHUTDOWN_GRACE_SECONDS", 30.0)
# The bearer token a Prometheus scraper sends to /metrics; admins may read it without (chatplatform.metrics).
CHAT_METRICS_TOKEN = env_str("CHAT_METRICS_TOKEN", "")
# Off: nothing is counted and /metrics is 404 (bench/metrics.py compares a turn with and without).
CHAT_METRICS_ENABLED = env_bool("CHAT_METRICS_ENABLED", default=True)
# With several server processes on a machine: the directory their counters share (docs/deploy.md, "Metrics").
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR", "")
# Traces (docs/deploy.md, "Traces"): on when the OpenTelemetry SDK's own variables name an exporter;
# the SDK reads the rest of its OTEL_* variables (headers, sampler, batching) itself.
OTEL_TRACES_EXPORTED = bool(env_str("OTEL_EXPORTER_OTLP_ENDPOINT", "") or env_str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""))
OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "chatplatform")
# Prompts and answers recorded on the spans: they hold what users wrote.
OTEL_CAPTURE_CONTENT = env_bool("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", default=False)
# Tool execution: the sandbox of inline JavaScript tools, the largest result a tool may
# give the model (bytes of JSON), model round trips per turn, and how much of a call's arguments
# and result a trace keeps.
CHAT_INLINE_MEMORY_MB = env_int("CHAT_INLINE_MEMORY_MB", 64, minimum=1)
CHAT_INLINE_STACK_KB = env_int("CHAT_INLINE_STACK_KB", 1024, minimum=64)
CHAT_TOOL_RESULT_MAX_BYTES = env_int("CHAT_TOOL_RESULT_MAX_BYTES", 262144, minimum=1024)
CHAT_TOOL_MAX_ROUND_TRIPS = env_int("CHAT_TOOL_MAX_ROUND_TRIPS", 10, minimum=1)
CHAT_TOOL_TRACE_MAX_CHARS = env_int("CHAT_TOOL_TRACE_MAX_CHARS", 2000, minimum=100)

# Knowledge bases (README "Knowledge bases"). The embedding model is `openai:<model>` or `bedrock:<model>`;
# unset, search is lexical only. Documents up to CHAT_KB_INLINE_INDEX_BYTES are indexed within the
# upload request, larger ones by the background task.
CHAT_EMBEDDING_MODEL = env_embedding_model("CHAT_EMBEDDING_MODEL")
CHAT_EMBEDDING_TIMEOUT_SECONDS = env_float("CHAT_EMBEDDING_TIMEOUT_SECONDS", 30.0)
CHAT_KB_MAX_DOCUMENT_BYTES = env_int("CHAT_KB_MAX_DOCUMENT_BYTES", 20 * 1024 * 1024, minimum=1)
CHAT_KB_INLINE_INDEX_BYTES = env_int("CHAT_KB_INLINE_INDEX_BYTES", 1024 * 1024, minimum=0)
CHAT_KB_RETRIEVE_TIMEOUT_SECONDS = env_float("CHAT_KB_RETRIEVE_TIMEOUT_SECONDS", 10.0)


# --- Background work: `manage.py run_worker` (README "Background worker") ------------------------
# The database backend by default (nothing else to install); RQ on Redis when REDIS_URL is set.
# `immediate` runs a task inside the process that enqueues it (no worker; for experiments).
_TASK_BACKENDS = {
    "database": {"BACKEND": "django_tasks_db.DatabaseBackend"},
    "rq": {"BACKEND": "django_tasks_rq.RQBackend"},
    "immediate": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"},
}
CHAT_TASK_BACKEND = env_choice("CHAT_TASK_BACKEND", "rq" if REDIS_URL else "database", tuple(_TASK_BACKENDS))
if CHAT_TASK_BACKEND == "rq" and not REDIS_URL:
    raise malformed("CHAT_TASK_BACKEND", "rq needs REDIS_URL")
TASKS = {"default": _TASK_BACKENDS[CHAT_TASK_BACKEND]}
if CHAT_TASK_BACKEND == "rq":
    # Its app (the RQ dashboard) imports redis and rq: only where RQ is the backend.
    INSTALLED_APPS.append("django_rq")
# django-rq's queue (the RQ backend's broker); the worker runs jobs in its own process, no fork.
RQ_QUEUES = {"default": {"URL": REDIS_URL or "redis://127.0.0.1:6379/0", "DEFAULT_TIMEOUT": 900}}
# How often an idle worker looks for due tasks, webhook deliveries and periodic jobs.
CHAT_WORKER_POLL_SECONDS = env_float("CHAT_WORKER_POLL_SECONDS", 0.5)
# How often a worker says it lives; one silent for 3 heartbeats is taken for dead (its tasks requeued).
CHAT_WORKER_HEARTBEAT_SECONDS = env_float("CHAT_WORKER_HEARTBEAT_SECONDS", 5.0)
# Failing tasks: CHAT_TASK_MAX_ATTEMPTS attempts, the n-th retry after CHAT_TASK_BACKOFF_SECONDS × 2^(n-1), ±25 %.
CHAT_TASK_MAX_ATTEMPTS = env_int("CHAT_TASK_MAX_ATTEMPTS", 4, minimum=1)
CHAT_TASK_BACKOFF_SECONDS = env_float("CHAT_TASK_BACKOFF_SECONDS", 10.0)
# Seconds between runs of each periodic job (a JSON object overrides some of them).
CHAT_PERIODIC_JOBS = env_seconds(
    "CHAT_PERIODIC_JOBS",
    {
        "complete_idle_sessions": 60.0,
        "recover_stalled_work": 60.0,
        "cleanup_mock_records": 86400.0,
        "prune_task_records": 86400.0,
        "expire_approvals": 60.0,
        "apply_retention": 3600.0,
    },
)
# Webhook deliveries (README "Background worker, webhooks, session insights"): the time limit of
# one attempt, the first retry's delay (doubled each time, ±25 %, at most an hour), how long a
# delivery is retried, and attempts in flight per worker.
CHAT_WEBHOOK_TIMEOUT_SECONDS = env_float("CHAT_WEBHOOK_TIMEOUT_SECONDS", 10.0)
CHAT_WEBHOOK_BACKOFF_SECONDS = env_float("CHAT_WEBHOOK_BACKOFF_SECONDS", 10.0)
CHAT_WEBHOOK_RETRY_HOURS = env_float("CHAT_WEBHOOK_RETRY_HOURS", 24.0)
CHAT_WEBHOOK_CONCURRENCY = env_int("CHAT_WEBHOOK_CONCURRENCY", 16, minimum=1)
# Session insights: the time limit of one analysis by CHAT_INSIGHTS_MODEL.
CHAT_INSIGHTS_TIMEOUT_SECONDS = env_float("CHAT_INSIGHTS_TIMEOUT_SECONDS", 120.0)

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", LOG_LEVELS, upper=True)
# `json`: one JSON object a line (python-json-logger), for log collectors; `text` for people.
LOG_FORMAT = env_choice("LOG_FORMAT", "text", ("text", "json"))
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
    # A token in a query string (the WebSocket's `?token=`) never reaches a log (chatplatform.logs).
    "filters": {"redact_tokens": {"()": "chatplatform.logs.RedactTokens"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "default", "filters": ["redact_tokens"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Django's own console handlers would print every record a second time through the root, and
    # runserver's request lines (django.server) would bypass the filter.
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.server": {"handlers": [], "propagate": True},
        # The HTTP clients of the model SDKs log every request at INFO.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

# --- Bounded work: what a stored object, an upload, a rule or a sign-in attempt may cost ---------
# (docs/deploy.md, "Limits on hostile input")
# A web component script from the store, decoded: larger is refused (400 when stored, 502 when served).
CHAT_WIDGET_SCRIPT_MAX_BYTES = env_int("CHAT_WIDGET_SCRIPT_MAX_BYTES", 5 * 1024 * 1024, minimum=1024)
# Knowledge base documents are parsed in a child process with these limits; past one the
# document is `failed` with the reason: its text, its pages (PDF), the decompressed bytes of
# its streams (PDF), the parse's wall-clock time and the child's address space.
CHAT_KB_MAX_TEXT_CHARS = env_int("CHAT_KB_MAX_TEXT_CHARS", 10_000_000, minimum=1000)
CHAT_KB_MAX_PAGES = env_int("CHAT_KB_MAX_PAGES", 2000, minimum=1)
CHAT_KB_MAX_DECOMPRESSED_BYTES = env_int("CHAT_KB_MAX_DECOMPRESSED_BYTES", 50 * 1024 * 1024, minimum=1024)
CHAT_KB_PARSE_SECONDS = env_float("CHAT_KB_PARSE_SECONDS", 60.0)
CHAT_KB_PARSE_MEMORY_MB = env_int("CHAT_KB_PARSE_MEMORY_MB", 1024, minimum=64)
# An access rule's condition with a comprehension may run this long; past it the rules deny.
CHAT_ACCESS_RULE_BUDGET_MS = env_int("CHAT_ACCESS_RULE_BUDGET_MS", 100, minimum=1)
# Sign-in (/accounts/login/, /admin/login/): failed attempts per username and per client address
# within the window, after which sign-in is refused (429) until the window ends.
CHAT_SIGNIN_MAX_FAILURES_PER_USER = env_int("CHAT_SIGNIN_MAX_FAILURES_PER_USER", 10, minimum=1)
CHAT_SIGNIN_MAX_FAILURES_PER_ADDRESS = env_int("CHAT_SIGNIN_MAX_FAILURES_PER_ADDRESS", 50, minimum=1)
CHAT_SIGNIN_WINDOW_SECONDS = env_int("CHAT_SIGNIN_WINDOW_SECONDS", 900, minimum=1)
# Refuses sign-in POSTs once a username or address is locked out (chatplatform.signin). Last: it
# reads the form only for those two paths, after the session and CSRF middleware set up the request.
MIDDLEWARE = [*MIDDLEWARE, "chatplatform.signin.SignInThrottle"]
# A Content-Security-Policy on the Django admin's pages (chatplatform.middleware).
MIDDLEWARE.append("chatplatform.middleware.AdminContentSecurityPolicy")
