"""Production refuses to start insecure (docs/deploy.md): with DEBUG off, a signing key anyone can
read (the development key, in this repository) stops the server, the worker and every command with
one line naming the variable; `manage.py check` still runs, to report it; Django's deploy checks
pass on the production settings docs/deploy.md documents."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Callable

import pytest

from chatplatform.safety import DEV_SECRET_KEY
from tests.servers import ROOT, free_port

DEPLOY_DOC = ROOT / "docs" / "deploy.md"


@pytest.fixture(scope="module")
def platform_env(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, str]]:
    """The test run's environment without the variables these tests are about, plus the ones given;
    on a throwaway database (a command that should have been refused must not write to the checkout's)."""
    unset = {"SECRET_KEY", "DEBUG", "JWT_SIGNING_KEY", "JWT_JWKS_URL", "REDIS_URL", "CHAT_TASK_BACKEND"}
    base = {name: value for name, value in os.environ.items() if name not in unset}
    base["DATABASE_URL"] = f"sqlite:///{tmp_path_factory.mktemp('production') / 'db.sqlite3'}"
    return lambda **variables: {**base, **variables}


def run(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=90)


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run(env, sys.executable, "manage.py", *args)


def assert_refused_naming(result: subprocess.CompletedProcess[str], variable: str) -> None:
    assert result.returncode != 0, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {variable} "), lines[0]


def test_the_server_refuses_to_start_with_debug_off_and_no_secret_key(platform_env):
    server = [sys.executable, "-m", "chatplatform.server", "chatplatform.asgi:application", "--port", str(free_port())]
    assert_refused_naming(run(platform_env(DEBUG="false"), *server, "--lifespan", "off"), "SECRET_KEY")


@pytest.mark.parametrize("command", [["run_worker", "--burst"], ["issue_token", "mallory", "--admin"], ["migrate", "--noinput"]])
def test_the_worker_and_commands_refuse_to_start_with_debug_off_and_no_secret_key(platform_env, command):
    assert_refused_naming(manage(platform_env(DEBUG="false"), *command), "SECRET_KEY")


def test_the_development_key_given_as_a_variable_is_refused_too(platform_env):
    assert_refused_naming(manage(platform_env(DEBUG="false", SECRET_KEY=DEV_SECRET_KEY), "migrate", "--noinput"), "SECRET_KEY")


def test_a_development_jwt_signing_key_is_refused_whatever_else_verifies_tokens(platform_env):
    env = platform_env(SECRET_KEY=secrets.token_urlsafe(50), JWT_SIGNING_KEY=DEV_SECRET_KEY, JWT_JWKS_URL="https://idp.example.com/jwks")
    assert_refused_naming(manage(env, "issue_token", "mallory", "--admin"), "JWT_SIGNING_KEY")


def test_check_reports_an_unsafe_key_beside_djangos_deploy_checks_instead_of_refusing(platform_env):
    result = manage(platform_env(DEBUG="false"), "check", "--deploy")
    assert result.returncode == 1
    assert "(chatplatform.E001) SECRET_KEY is not set and DEBUG is off" in result.stderr
    assert "security.W009" in result.stderr, "Django's own deploy checks ran too"


def test_without_secret_key_or_debug_it_is_the_development_setup_of_make_run(platform_env):
    result = manage(platform_env(), "check")
    assert result.returncode == 0, result.stderr
    assert "using the development key" in result.stderr


def documented_production_settings() -> dict[str, str]:
    """The variables of docs/deploy.md's production example, each `<placeholder>` a fresh random value."""
    block = re.search(r"```sh\n# production settings\n(.*?)```", DEPLOY_DOC.read_text(), re.DOTALL)
    assert block, "docs/deploy.md shows the production settings in a ```sh block headed '# production settings'"
    variables = dict(line.split("=", 1) for line in block.group(1).splitlines() if line and not line.startswith("#"))
    return {name: re.sub(r"<[^>]+>", lambda _: secrets.token_urlsafe(50), value) for name, value in variables.items()}


def test_djangos_deploy_checks_pass_on_the_documented_production_settings(platform_env):
    settings = documented_production_settings()
    assert settings["DEBUG"] == "false"
    result = manage(platform_env(**settings), "check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
