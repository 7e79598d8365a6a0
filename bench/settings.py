"""Settings for benchmarks: the platform's, plus a bare comparison view (bench/urls.py)."""

from chatplatform.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
DEBUG = False
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "ERROR"}}
