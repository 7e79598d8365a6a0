"""Configuration files for `export_config` and `apply_config`: YAML or JSON, chosen by the file's extension."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from django.core.serializers.json import DjangoJSONEncoder

FORMATS = {".yaml": "yaml", ".yml": "yaml", ".json": "json"}


class FileFormatError(ValueError):
    """The file's name or contents are not a configuration document; the message says why."""


def format_of(path: Path) -> str:
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise FileFormatError(f"{path}: the extension must be .yaml, .yml or .json") from None


def dumps(config: dict[str, Any], file_format: str) -> str:
    text = json.dumps(config, indent=2, ensure_ascii=False)
    if file_format == "json":
        return text + "\n"
    # Plain values (serializers hand out choice enums and their own dict types); block style and the
    # export's own key order: a reviewer reads the diff of this file.
    return yaml.safe_dump(json.loads(text), sort_keys=False, allow_unicode=True, default_flow_style=False, width=120)


def load(path: Path) -> Any:
    """The document in `path`; FileFormatError when it cannot be read or parsed."""
    file_format = format_of(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileFormatError(f"{path}: {exc.strerror}") from None
    try:
        document = json.loads(text) if file_format == "json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise FileFormatError(f"{path}: not valid {file_format.upper()}: {exc}") from None
    try:
        # JSON values only, as the API receives them: YAML reads an unquoted 2026-01-31 as a date.
        return json.loads(json.dumps(document, cls=DjangoJSONEncoder))
    except (TypeError, ValueError) as exc:
        raise FileFormatError(f"{path}: holds a value JSON cannot: {exc}") from None
