"""The parsers settings.py reads the environment through: one per kind of value, each with an
embedded default, each refusing a malformed value with ImproperlyConfigured naming the variable
and the rule (manage.py and chatplatform.server print that one line and stop).

An unset variable and an empty one mean the same: the default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from chatplatform.model_names import model_name_error

T = TypeVar("T")

WEBHOOK_EVENTS = ("session.created", "session.completed", "feedback.created", "insight.generated")


def malformed(name: str, rule: str) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"environment variable {name} is malformed: {rule}")


def _raw(name: str) -> str | None:
    """The variable's value, stripped; None when unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or None


def env_str(name: str, default: T) -> str | T:
    return _raw(name) or default


def env_bool(name: str, default: bool) -> bool:
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in {"1", "true", "yes", "on"}:
        return True
    if raw.lower() in {"0", "false", "no", "off"}:
        return False
    raise malformed(name, "must be true or false")


def env_int(name: str, default: int, minimum: int = 0) -> int:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise malformed(name, "must be a whole number") from None
    if value < minimum:
        raise malformed(name, f"must be at least {minimum}")
    return value


def env_optional_int(name: str, minimum: int = 1) -> int | None:
    """A whole number of at least `minimum`, or None when unset."""
    return None if _raw(name) is None else env_int(name, minimum, minimum)


def env_float(name: str, default: float) -> float:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise malformed(name, "must be a number") from None
    if not 0 < value < float("inf"):
        raise malformed(name, "must be a positive number")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """Comma-separated values, blanks dropped."""
    raw = _raw(name)
    return default if raw is None else [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...], *, upper: bool = False) -> str:
    raw = _raw(name)
    if raw is None:
        return default
    value = raw.upper() if upper else raw.lower()
    if value not in choices:
        raise malformed(name, f"{raw!r} must be one of {', '.join(choices)}")
    return value


def env_json(name: str, default: Any, kind: type) -> Any:
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise malformed(name, f"not valid JSON ({exc.msg})") from None
    if not isinstance(value, kind):
        raise malformed(name, f"must be a JSON {kind.__name__}")
    return value


def env_url(name: str, schemes: set[str]) -> str | None:
    raw = _raw(name)
    if raw is None:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in schemes or (parts.scheme != "sqlite" and not parts.hostname):
        raise malformed(name, f"must be a URL with scheme {' or '.join(sorted(schemes))} and a host")
    return raw


def env_path(name: str, default: Path) -> Path:
    raw = _raw(name)
    return default if raw is None else Path(raw)


def env_folder(name: str) -> Path | None:
    """A folder that must exist when the variable is set."""
    raw = _raw(name)
    if raw is None:
        return None
    folder = Path(raw).resolve()
    if not folder.is_dir():
        raise malformed(name, f"{raw!r} is not a folder")
    return folder


def env_database(name: str) -> dict[str, Any] | None:
    """A database URL (postgres or sqlite) as Django's DATABASES entry; None when unset."""
    url = env_url(name, {"postgres", "postgresql", "pgsql", "sqlite"})
    if url is None:
        return None
    import environ  # django-environ reads the URL's parts, options included

    try:
        return environ.Env.db_url_config(url)
    except Exception as exc:  # django-environ raises several types for a bad URL
        raise malformed(name, str(exc)) from None


def env_model(name: str, default: str) -> str:
    """A model name (docs/api.md, "Models"): refused at start-up, not at the first turn that uses it."""
    raw = _raw(name)
    if raw is None:
        return default
    error = model_name_error(raw)
    if error is not None:
        raise malformed(name, error)
    return raw


def env_embedding_model(name: str) -> str | None:
    """`openai:<model>` or `bedrock:<model>`; None when unset."""
    raw = _raw(name)
    if raw is None:
        return None
    provider, _, model = raw.partition(":")
    if provider not in {"openai", "bedrock"} or not model.strip() or " " in model:
        raise malformed(name, "must be 'openai:<model>' or 'bedrock:<model>'")
    return raw


def env_origins(name: str) -> list[str]:
    """Comma-separated origins (`scheme://host[:port]`), each as the browser writes it."""
    origins: list[str] = []
    for entry in env_list(name, []):
        parts = urlsplit(entry)
        # Anything more than an origin would be another CSP source (a path) or break the header.
        shaped = parts.scheme in {"http", "https"} and parts.hostname and parts.path in {"", "/"} and not (parts.query or parts.fragment)
        if not shaped or "@" in parts.netloc or any(ch in entry for ch in " ;'\""):
            raise malformed(name, f"{entry!r} is not an origin: write scheme://host[:port] (http or https, no path)")
        try:
            port = parts.port
        except ValueError:
            raise malformed(name, f"{entry!r} has an invalid port") from None
        assert parts.hostname is not None  # shaped
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        origin = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
        if origin not in origins:
            origins.append(origin)
    return origins


def env_limits(name: str, defaults: dict[str, int]) -> dict[str, int]:
    """A JSON object overriding some of `defaults` with positive whole numbers."""
    limits = dict(defaults)
    for key, value in env_json(name, {}, dict).items():
        if key not in defaults or isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise malformed(name, f"{key!r} must be one of {sorted(defaults)} with a positive whole number")
        limits[key] = value
    return limits


def env_seconds(name: str, defaults: dict[str, float]) -> dict[str, float]:
    """A JSON object overriding some of `defaults` with positive numbers of seconds."""
    seconds = dict(defaults)
    for key, value in env_json(name, {}, dict).items():
        if key not in defaults or isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise malformed(name, f"{key!r} must be one of {sorted(defaults)} with a positive number of seconds")
        seconds[key] = float(value)
    return seconds


def env_webhooks(name: str) -> list[dict[str, Any]]:
    """`[{url, secret, events}]` (docs/api.md, "Webhooks"). A message names the entry and the
    field, never a secret's value (start-up errors end up in logs)."""
    entries = env_json(name, [], list)
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"[{index}]"
        if not isinstance(entry, dict):
            raise malformed(name, f"{where} must be an object {{url, secret, events}}")
        unknown = sorted(set(entry) - {"url", "secret", "events"})
        if unknown:
            raise malformed(name, f"{where}.{unknown[0]} is not a field of a webhook (url, secret, events)")
        url = entry.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in {"http", "https"} or not parts.hostname:
            raise malformed(name, f"{where}.url must be an http or https URL with a host")
        assert isinstance(url, str)  # parts is None otherwise
        if url in seen:
            raise malformed(name, f"{where}.url repeats the url of [{seen[url]}]; list its events once")
        seen[url] = index
        if not isinstance(entry.get("secret"), str) or not entry["secret"].strip():
            raise malformed(name, f"{where}.secret is required and must be a non-empty string")
        events = entry.get("events")
        if not isinstance(events, list) or not events:
            raise malformed(name, f"{where}.events must be a non-empty list of {', '.join(WEBHOOK_EVENTS)}")
        for number, event in enumerate(events):
            if event not in WEBHOOK_EVENTS:
                raise malformed(name, f"{where}.events[{number}] must be one of {', '.join(WEBHOOK_EVENTS)}")
        if len(set(events)) != len(events):
            raise malformed(name, f"{where}.events lists an event more than once")
    return entries
