"""The server side of the widget runtime (docs/api.md, "Widgets"): widget data kept per user and
tag, the scripts of store-located web components, the `custom-compiled-in` renderer folder, and
what the chat page's config tells the browser about all of them."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from chat.users.models import ChatUser
from chat.widgets.models import WidgetData
from chatplatform import metrics, storage
from chatplatform.api.errors import ApiError, Code, InvalidRequest, NotFound
from tags.models import TagDefinition, WidgetType
from tags.validation import NAME_PATTERN, NAME_RULE

WIDGET_DATA_MAX_BYTES = 400 * 1024  # docs/api.md, "Widgets": at most 400 KB serialized
WEB_COMPONENT_PATH = "/api/chat/webcomponent/"
WIDGET_DATA_PATH = "/api/chat/widget-data/"
RENDERERS_PATH = "/widgets/renderers/"


def check_tag_reference(scope: str, tag: str) -> None:
    """A path's scope and tag follow the tag name rule (docs/api.md, "Tag definitions"), or the request is 400."""
    for field, value in (("scope", scope), ("tag", tag)):
        if len(value) > 100 or not NAME_PATTERN.fullmatch(value):
            raise InvalidRequest(f"{NAME_RULE}, at most 100 characters", field=field)


# --- Widget data ----------------------------------------------------------------------------------


def widget_data_get(*, user_id: str, scope: str, tag: str) -> dict[str, Any] | None:
    """The stored object, or None when nothing is stored."""
    row = WidgetData.objects.filter(user_id=user_id, scope=scope, tag=tag).only("data").first()
    return row.data if row is not None else None


def widget_data_set(*, user_id: str, scope: str, tag: str, data: dict[str, Any], partial: bool) -> dict[str, Any]:
    """Replace the stored object, or with `partial` merge top-level keys into it (a key set to null
    is removed, as for user prefs). Over WIDGET_DATA_MAX_BYTES serialized: 400, nothing written."""
    with transaction.atomic():
        ChatUser.objects.get_or_create(user_id=user_id, defaults={"password": "!"})
        # Created when missing (get_or_create survives a racing first write), then locked, so two
        # partial writes at once both land; a refused write rolls the new row back with it.
        created = WidgetData.objects.get_or_create(user_id=user_id, scope=scope, tag=tag)[0]
        row = WidgetData.objects.select_for_update().get(pk=created.pk)
        merged = {**(row.data if isinstance(row.data, dict) else {}), **data} if partial else dict(data)
        if partial:
            merged = {key: value for key, value in merged.items() if value is not None}
        size = len(orjson.dumps(merged))
        if size > WIDGET_DATA_MAX_BYTES:
            raise InvalidRequest(f"must be at most {WIDGET_DATA_MAX_BYTES} bytes serialized (400 KB); it would be {size}", field="data")
        row.data, row.size, row.last_update = merged, size, timezone.now()
        row.save(update_fields=["data", "size", "last_update"])
    return merged


def widget_data_delete(*, user_id: str, scope: str, tag: str) -> None:
    WidgetData.objects.filter(user_id=user_id, scope=scope, tag=tag).delete()


# --- Web components from the store ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Script:
    """A script's ETag, and its source read only when asked for: a revalidation (304) needs the ETag alone."""

    etag: str
    load: Callable[[], bytes]

    @property
    def source(self) -> bytes:
        return self.load()


# Entries are per stored version (a replaced object gets new keys), so they never go stale; a day
# bounds what an unused one holds in the cache.
_SCRIPT_CACHE_SECONDS = 24 * 3600


def store_location(widget: Any) -> tuple[str, str] | None:
    """(bucket, key) of a web component widget located in the store; None for a `url` or another kind."""
    if not isinstance(widget, dict) or widget.get("type") != WidgetType.WEB_COMPONENT:
        return None
    component = widget.get("webComponent")
    if not isinstance(component, dict):
        return None
    store = nested if isinstance(nested := component.get("store"), dict) else component
    bucket, key = store.get("storeBucket"), store.get("storeKey")
    return (bucket, key) if isinstance(bucket, str) and isinstance(key, str) else None


class Undecodable(ApiError):
    """A stored script that its `encoding` does not decode, or too large: the store's content is at fault."""

    status_code = 502
    code = Code.INTERNAL_ERROR


def web_component_script(*, scope: str, tag: str) -> Script:
    """The decoded script of a store-located web component tag, whatever its status (a disabled
    tag is never rendered, so serving its script does no harm and keeps caching simple).

    Decoded once per stored version, within CHAT_WIDGET_SCRIPT_MAX_BYTES, and kept in the cache
    with its ETag (a refusal too): a request costs a look at the object's version, and a 304
    nothing more, however large the object inflates (docs/widgets.md)."""
    definition = TagDefinition.objects.filter(scope=scope, tag=tag).only("widget").first()
    if definition is None:
        raise NotFound(f"tag definition {scope}.{tag} not found")
    location = store_location(definition.widget)
    if location is None:
        raise NotFound(f"tag definition {scope}.{tag} is not a web component located in the store")
    bucket, key = location
    try:
        stat = storage.store_stat(bucket=bucket, key=key)
    except FileNotFoundError:
        raise NotFound(f"the store holds no object at {bucket}/{key} (tag {scope}.{tag})") from None
    encoding = definition.widget["webComponent"].get("encoding") or "none"
    limit = settings.CHAT_WIDGET_SCRIPT_MAX_BYTES
    identity = "\0".join([bucket, key, encoding, stat.version, str(limit)])
    cache_key = "widget-script:" + hashlib.sha256(identity.encode()).hexdigest()

    def decoded() -> tuple[str, bytes]:
        try:
            storage.check_stored_size(stat.size, encoding, limit)  # refused unread
            content = storage.store_read(bucket=bucket, key=key, max_bytes=storage.stored_size_limit(encoding, limit))
            source = storage.decode(content, encoding, limit=limit)
        except FileNotFoundError:
            raise NotFound(f"the store holds no object at {bucket}/{key} (tag {scope}.{tag})") from None
        except storage.Undecodable as exc:
            metrics.widget_script_decoded(ok=False)
            cache.set(f"{cache_key}:etag", f"!{exc}", _SCRIPT_CACHE_SECONDS)
            raise Undecodable(str(exc)) from None
        metrics.widget_script_decoded(ok=True)
        etag = '"' + hashlib.sha256(source).hexdigest()[:32] + '"'
        cache.set_many({f"{cache_key}:etag": etag, f"{cache_key}:source": source}, _SCRIPT_CACHE_SECONDS)
        return etag, source

    etag = cache.get(f"{cache_key}:etag")
    if etag is None:
        etag, source = decoded()
        return Script(etag, lambda: source)
    if etag.startswith("!"):
        raise Undecodable(etag[1:])

    def load() -> bytes:
        source = cache.get(f"{cache_key}:source")
        return source if source is not None else decoded()[1]

    return Script(etag, load)


# --- custom-compiled-in renderers -------------------------------------------------------------------


def renderer_file(name: str) -> Path | None:
    """The module `<scope>.<tag>.js` of CHAT_WIDGET_RENDERERS_DIR; None when absent or misnamed."""
    folder = settings.CHAT_WIDGET_RENDERERS_DIR
    scope, dot, rest = name.partition(".")
    tag, _, extension = rest.partition(".")
    if folder is None or not dot or extension != "js" or not NAME_PATTERN.fullmatch(scope) or not NAME_PATTERN.fullmatch(tag):
        return None
    path = Path(folder) / name
    return path if path.is_file() else None


def renderers() -> dict[str, str]:
    """The registry of the page config: tag id (`scope.tag`) → URL of its module."""
    folder = settings.CHAT_WIDGET_RENDERERS_DIR
    if folder is None or not Path(folder).is_dir():
        return {}
    found = {}
    for path in sorted(Path(folder).iterdir()):
        if renderer_file(path.name) is not None:
            found[path.name.removesuffix(".js")] = RENDERERS_PATH + path.name
    return found


# --- The page's config -------------------------------------------------------------------------------


def page_config(definitions: list[TagDefinition], rendered: list[dict[str, Any]]) -> dict[str, Any]:
    """`config.widgets` of the chat page (docs/widgets.md): what the browser runtime needs that
    only the server knows. `rendered` is the wire form of `definitions`."""
    scripts = {}
    for definition in definitions:
        if definition.widget_type != WidgetType.WEB_COMPONENT:
            continue
        tag_id = f"{definition.scope}.{definition.tag}"
        if store_location(definition.widget) is not None:
            scripts[tag_id] = f"{WEB_COMPONENT_PATH}{definition.scope}/{definition.tag}"
        elif isinstance(url := (definition.widget.get("webComponent") or {}).get("url"), str):
            # A definition written through the Admin API keeps its `{{stage}}` (only the IaC deploy
            # replaces it); the address the browser loads never holds the placeholder.
            scripts[tag_id] = url.replace("{{stage}}", settings.CHAT_STAGE)
    return {
        "tags": rendered,
        "scriptOrigins": list(settings.CHAT_WIDGET_SCRIPT_ORIGINS),
        "webComponentUrl": WEB_COMPONENT_PATH,
        "widgetDataUrl": WIDGET_DATA_PATH,
        "webComponentScripts": scripts,
        "renderers": renderers(),
    }
