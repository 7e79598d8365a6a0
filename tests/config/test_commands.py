"""`manage.py export_config` and `apply_config` in YAML and JSON (docs/api.md, "Configuration as code")."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from tests.config.conftest import SECRET, empty_deployment, export, populate

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def fill_secret(path: Path) -> None:
    """Put the real secret where the export wrote "********", as an operator does (docs/deploy.md)."""
    path.write_text(path.read_text(encoding="utf-8").replace("********", SECRET), encoding="utf-8")


@pytest.mark.parametrize(("name", "parse"), [("config.yaml", yaml.safe_load), ("config.json", json.loads)])
def test_export_then_apply_on_an_empty_deployment_restores_it(admin_client, tmp_path, name, parse):
    populate(admin_client)
    exported = export(admin_client)
    path = tmp_path / name

    assert run("export_config", str(path)) == f"wrote 8 definitions to {path}\n"
    assert parse(path.read_text(encoding="utf-8")) == exported
    empty_deployment(admin_client)
    fill_secret(path)

    output = run("apply_config", str(path))

    assert "create agents helper\n" in output
    assert output.endswith("create 8, update 0, delete 0, unchanged 0\n")
    assert export(admin_client) == exported
    assert run("apply_config", str(path)) == "create 0, update 0, delete 0, unchanged 8\n"


def test_export_to_standard_output_is_yaml_unless_asked_for_json(admin_client):
    populate(admin_client)

    assert yaml.safe_load(run("export_config")) == export(admin_client)
    assert json.loads(run("export_config", "--format", "json")) == export(admin_client)


def test_apply_dry_run_and_prune(admin_client, tmp_path):
    populate(admin_client)
    path = tmp_path / "tools.yml"
    config = export(admin_client)
    path.write_text(yaml.safe_dump({"tools": [tool for tool in config["tools"] if tool["toolId"] == "weather@1"]}), encoding="utf-8")

    assert run("apply_config", str(path), "--prune", "--dry-run") == (
        "would delete tools forecast@2\nwould create 0, update 0, delete 1, unchanged 1\n"
    )
    assert len(export(admin_client)["tools"]) == 2
    assert run("apply_config", str(path), "--prune") == "delete tools forecast@2\ncreate 0, update 0, delete 1, unchanged 1\n"
    assert [tool["toolId"] for tool in export(admin_client)["tools"]] == ["weather@1"]


def test_apply_reports_an_invalid_definition_and_writes_nothing(admin_client, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"agents": [{"agentId": "helper", "basePrompt": "Hi", "toolIds": ["missing@1"]}]}), encoding="utf-8")

    with pytest.raises(CommandError, match=r"config\.agents\[helper\]\.toolIds: tool missing@1 does not exist"):
        run("apply_config", str(path))
    assert export(admin_client)["agents"] == []


def test_a_yaml_date_written_without_quotes_is_read_as_its_text(admin_client, tmp_path):
    path = tmp_path / "tools.yaml"
    path.write_text(
        """
tools:
- toolId: clock@1
  executionType: inline
  name: clock
  displayName: Clock
  description: Tells the time
  supportedAgentFrameworks: [hosted]
  functionSchema:
  - {name: now, description: The time, parameters: {}}
  code: "() => Date.now()"
  lifecycle:
    status: deprecated
    deprecationDate: 2027-01-31
""",
        encoding="utf-8",
    )

    assert run("apply_config", str(path)) == "create tools clock@1\ncreate 1, update 0, delete 0, unchanged 0\n"
    assert export(admin_client)["tools"][0]["lifecycle"]["deprecationDate"].startswith("2027-01-31")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("config.txt", "{}", "the extension must be .yaml, .yml or .json"),
        ("config.json", "{not json", "not valid JSON"),
        ("config.yaml", "tools: [unclosed", "not valid YAML"),
        ("config.yaml", "tools: !!binary aGk=", "holds a value JSON cannot"),
    ],
)
def test_apply_refuses_a_file_it_cannot_read(db, tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")

    with pytest.raises(CommandError, match=message):
        run("apply_config", str(path))


def test_apply_refuses_a_missing_file(db, tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        run("apply_config", str(tmp_path / "absent.yaml"))
