"""Settings from the environment (README.md, "Configuration"): a malformed value stops start-up naming the variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.servers import ROOT


def start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DATABASE_URL", "not a url"),
        ("DATABASE_URL", "mysql2://x@y/z"),
        ("REDIS_URL", "http://127.0.0.1:6379"),
        ("CHAT_SITE_FEATURES", "{not json"),
        ("CHAT_SITE_FEATURES", "[1, 2]"),
        ("CHAT_SITE_FEATURES", '{"usageLimits": {"enabled": true, "perUser": {"daily": {"tokens": "many"}}}}'),
        ("CHAT_SITE_FEATURES", '{"tagz": {"enabled": true}}'),
        ("CHAT_WEBHOOKS", '{"url": "x"}'),
        ("CHAT_MODEL_PRICES", "prices"),
        ("CHAT_SESSION_IDLE_MINUTES", "soon"),
        ("DEBUG", "maybe"),
        ("CHAT_RATE_LIMITS", '{"chat": -1}'),
        ("JWT_JWKS_URL", "ftp://idp/jwks"),
        ("CHAT_DEFAULT_MODEL", "nonsense"),
        ("CHAT_VERIFICATION_MODEL", "gpt-4o"),
        ("CHAT_SELECTION_MODEL", "openai:"),
        ("CHAT_TITLE_MODEL", "mistral:large"),
        ("CHAT_INSIGHTS_MODEL", "anthropic:two words"),
        ("CHAT_EMBEDDING_MODEL", "anthropic:embed"),
        ("LOG_LEVEL", "LOUD"),
        ("LOG_FORMAT", "xml"),
        ("CHAT_WIDGET_SCRIPT_ORIGINS", "https://widgets.example.com, widgets.example.org"),
        ("CHAT_WIDGET_SCRIPT_ORIGINS", "https://widgets.example.com/scripts/"),
        ("CHAT_WIDGET_SCRIPT_ORIGINS", "https://widgets.example.com; script-src *"),
        ("CHAT_WIDGET_RENDERERS_DIR", "/no/such/folder"),
        ("CHAT_WIDGET_STORE", "ftp"),
        ("CHAT_RETENTION_DAYS", "0"),
        ("CHAT_RETENTION_DAYS", "a week"),
        ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "maybe"),
    ],
)
def test_malformed_variable_stops_start_up_naming_it_in_one_line(variable, value):
    result = start({variable: value})
    assert result.returncode != 0
    assert f"error: environment variable {variable} is malformed" in result.stderr
    assert "Traceback" not in result.stderr


MODEL_SETTINGS = ["CHAT_DEFAULT_MODEL", "CHAT_VERIFICATION_MODEL", "CHAT_SELECTION_MODEL", "CHAT_TITLE_MODEL", "CHAT_INSIGHTS_MODEL"]


@pytest.mark.parametrize("variable", MODEL_SETTINGS)
def test_a_model_setting_that_names_no_provider_is_refused_with_the_expected_form(variable):
    result = start({variable: "nonsense"})
    assert result.returncode != 0
    assert variable in result.stderr
    assert "'openai:<model>'" in result.stderr, "the message shows the <provider>:<model> form"


def test_a_log_level_is_accepted_in_any_case_and_json_lines_are_a_log_format():
    result = start({"LOG_LEVEL": "warning", "LOG_FORMAT": "json"})
    assert result.returncode == 0, result.stderr


def test_json_log_format_writes_one_json_object_a_line():
    script = "import django, logging; django.setup(); logging.getLogger('probe').warning('hello %s', 'there')"
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "chatplatform.settings", "LOG_FORMAT": "json", "SECRET_KEY": "k" * 50},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello there"
    assert line["level"] == "WARNING"
    assert line["logger"] == "probe"


def test_embedded_defaults_start_cleanly():
    result = start({})
    assert result.returncode == 0, result.stderr


def test_the_deploy_check_sees_the_security_middleware_and_still_checks_what_depends_on_it():
    # chatplatform/middleware.py subclasses Django's security, CSRF and clickjacking middleware.
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env={**os.environ, "DEBUG": "false", "SECRET_KEY": "a-long-random-production-secret-" + "k3y!x9Q" * 6},
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = result.stdout + result.stderr
    assert "security.W004" in output, "HSTS is still checked"
    assert "security.W008" in output, "the SSL redirect is still checked"
    for missing in ("security.W001", "security.W002", "security.W003"):
        assert missing not in output


def test_widget_script_origins_are_read_as_origins():
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", "from django.conf import settings; print(settings.CHAT_WIDGET_SCRIPT_ORIGINS)"],
        cwd=ROOT,
        env={
            **os.environ,
            "CHAT_WIDGET_SCRIPT_ORIGINS": " https://widgets.example.com/ ,http://localhost:9000,, https://widgets.example.com",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "['https://widgets.example.com', 'http://localhost:9000']"
