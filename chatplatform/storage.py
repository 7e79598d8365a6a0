"""A Django storage that keeps its objects in the database: the default of the `widget_store`.

The store of web component scripts (SPEC.md `storeBucket`/`storeKey`) is read through Django's
storage API like the files of messages, so a deployment may point `widget_store` elsewhere; by
default it needs neither a file system shared by the server's processes nor a bucket. Scripts
are small and read rarely (the browser caches them by ETag), so a table does the job.
"""

from __future__ import annotations

import base64
import gzip
from typing import IO, Any

from django.conf import settings
from django.core.files.base import ContentFile, File
from django.core.files.storage import Storage, storages
from django.core.files.utils import validate_file_name
from django.db.models import Q
from django.utils import timezone
from django.utils.deconstruct import deconstructible

from chatplatform.models import StoredObject

WIDGET_STORE = "widget_store"
ENCODINGS = ("none", "gzip", "gzip+base64")  # SPEC.md `webComponent.encoding`


@deconstructible
class DatabaseStorage(Storage):
    """Objects by name in `StoredObject`. Saving a name that exists replaces it: in a store, a
    bucket and key name one object (Django's default would pick another name)."""

    def _open(self, name: str, mode: str = "rb") -> File:
        row = StoredObject.objects.filter(name=name).only("content").first()
        if row is None:
            raise FileNotFoundError(f"no stored object {name!r}")
        return ContentFile(bytes(row.content), name=name)

    def _save(self, name: str, content: IO[Any]) -> str:
        chunks = content.chunks() if isinstance(content, File) else [content.read()]
        data = b"".join(chunk.encode() if isinstance(chunk, str) else chunk for chunk in chunks)
        now = timezone.now()
        StoredObject.objects.update_or_create(
            name=name,
            defaults={"content": data, "size": len(data), "modified": now},
            create_defaults={"content": data, "size": len(data), "modified": now, "created": now},
        )
        return name

    def get_available_name(self, name: str, max_length: int | None = None) -> str:
        validate_file_name(name, allow_relative_path=True)
        return name

    def delete(self, name: str) -> None:
        StoredObject.objects.filter(name=name).delete()

    def exists(self, name: str) -> bool:
        return StoredObject.objects.filter(name=name).exists()

    def size(self, name: str) -> int:
        row = StoredObject.objects.filter(name=name).values_list("size", flat=True).first()
        if row is None:
            raise FileNotFoundError(f"no stored object {name!r}")
        return row

    def get_modified_time(self, name: str) -> Any:
        row = StoredObject.objects.filter(name=name).values_list("modified", flat=True).first()
        if row is None:
            raise FileNotFoundError(f"no stored object {name!r}")
        return row

    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        prefix = f"{path.strip('/')}/" if path.strip("/") else ""
        names = StoredObject.objects.filter(Q(name__startswith=prefix) if prefix else Q()).values_list("name", flat=True)
        directories, files = set(), []
        for name in names:
            first, slash, _ = name[len(prefix) :].partition("/")
            if slash:
                directories.add(first)
            else:
                files.append(first)
        return sorted(directories), sorted(files)

    def url(self, name: str | None) -> str:
        raise NotImplementedError("stored objects are served by the platform's own endpoints, never by URL")


def object_name(bucket: str, key: str) -> str:
    """Where `storeBucket`/`storeKey` live in the store: one name, the bucket as its first folder."""
    return f"{bucket}/{key.lstrip('/')}"


def _located(bucket: str, key: str) -> tuple[Storage, str]:
    """The storage and name of a bucket and key. With CHAT_WIDGET_STORE=s3 the bucket is an S3
    bucket of its own (as in the reference system) and the key its object key; otherwise both
    name one object of the `widget_store` storage."""
    if settings.CHAT_WIDGET_STORE == "s3":
        from storages.backends.s3 import S3Storage

        options = {"bucket_name": bucket, "endpoint_url": settings.CHAT_WIDGET_STORE_S3_ENDPOINT_URL, "default_acl": None}
        return S3Storage(**options, file_overwrite=True), key.lstrip("/")
    return storages[WIDGET_STORE], object_name(bucket, key)


def store_read(*, bucket: str, key: str) -> bytes:
    """The bytes at a bucket and key of the widget store; FileNotFoundError when there is none."""
    storage, name = _located(bucket, key)
    try:
        with storage.open(name, "rb") as stored:
            return stored.read()
    except OSError as exc:  # S3Storage raises its own FileNotFoundError-like errors
        raise FileNotFoundError(f"no stored object {bucket}/{key}") from exc


def store_write(*, bucket: str, key: str, content: bytes) -> str:
    """Put bytes at a bucket and key of the widget store, replacing what was there; the stored name."""
    storage, name = _located(bucket, key)
    if not isinstance(storage, DatabaseStorage) and storage.exists(name):
        storage.delete(name)  # other backends would save under another name
    return storage.save(name, ContentFile(content))


def encode(content: bytes, encoding: str) -> bytes:
    """Bytes as a web component definition with this `encoding` expects to find them in the store."""
    if encoding == "none":
        return content
    # mtime=0: the same file always gives the same bytes (and the same ETag once served).
    compressed = gzip.compress(content, mtime=0)
    return base64.b64encode(compressed) if encoding == "gzip+base64" else compressed


def store_list(*, bucket: str) -> list[tuple[str, int]]:
    """(key, size) of every object of a bucket, by key."""
    storage, root = _located(bucket, "")
    found, pending = [], [root.rstrip("/")]
    while pending:
        folder = pending.pop()
        directories, files = storage.listdir(folder)
        pending.extend(f"{folder}/{name}" if folder else name for name in directories)
        for name in files:
            path = f"{folder}/{name}" if folder else name
            found.append((path.removeprefix(root), storage.size(path)))
    return sorted(found)
