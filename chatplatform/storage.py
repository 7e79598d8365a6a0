"""A Django storage that keeps its objects in the database: the default of the `widget_store`.

The store of web component scripts (`storeBucket`/`storeKey`, docs/widgets.md) is read through Django's
storage API like the files of messages, so a deployment may point `widget_store` elsewhere; by
default it needs neither a file system shared by the server's processes nor a bucket. Scripts
are small and read rarely (the browser caches them by ETag), so a table does the job.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import zlib
from dataclasses import dataclass
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
ENCODINGS = ("none", "gzip", "gzip+base64")  # `webComponent.encoding` (docs/widgets.md)


@dataclass(frozen=True, slots=True)
class Stat:
    """What the store says of an object without reading it: a version that changes whenever the
    object is replaced (its S3 ETag, or its modification time and size), and its size in bytes."""

    version: str
    size: int


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

    def stat(self, name: str) -> Stat:
        """The object's version and size in one query (store_stat)."""
        row = StoredObject.objects.filter(name=name).values_list("modified", "size").first()
        if row is None:
            raise FileNotFoundError(f"no stored object {name!r}")
        return Stat(version=f"{row[0].isoformat()}/{row[1]}", size=row[1])

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


def _s3_storage(**options: Any) -> Storage:
    from storages.backends.s3 import S3Storage
    from storages.utils import clean_name

    class _S3Storage(S3Storage):
        def stat(self, name: str) -> Stat:
            """One HEAD: the ETag changes with every write, where the modification time has
            only one-second resolution."""
            from botocore.exceptions import ClientError

            entry = self.bucket.Object(self._normalize_name(clean_name(name)))
            try:
                return Stat(version=entry.e_tag, size=entry.content_length)
            except ClientError as exc:
                if exc.response["ResponseMetadata"]["HTTPStatusCode"] == 404:
                    raise FileNotFoundError(f"no stored object {name!r}") from None
                raise

    return _S3Storage(**options)


def _located(bucket: str, key: str) -> tuple[Storage, str]:
    """The storage and name of a bucket and key. With CHAT_WIDGET_STORE=s3 the bucket is an S3
    bucket of its own (as in the reference system) and the key its object key; otherwise both
    name one object of the `widget_store` storage."""
    if settings.CHAT_WIDGET_STORE == "s3":
        options = {"bucket_name": bucket, "endpoint_url": settings.CHAT_WIDGET_STORE_S3_ENDPOINT_URL, "default_acl": None}
        return _s3_storage(**options, file_overwrite=True), key.lstrip("/")
    return storages[WIDGET_STORE], object_name(bucket, key)


def store_stat(*, bucket: str, key: str) -> Stat:
    """The version and size of the object at a bucket and key, without reading it; FileNotFoundError when there is none."""
    storage, name = _located(bucket, key)
    try:
        stat = getattr(storage, "stat", None)  # DatabaseStorage's and the S3 store's: one query or HEAD
        if callable(stat):
            return stat(name)
        size = storage.size(name)
        return Stat(version=f"{storage.get_modified_time(name).isoformat()}/{size}", size=size)
    except OSError as exc:
        raise FileNotFoundError(f"no stored object {bucket}/{key}") from exc


def store_read(*, bucket: str, key: str, max_bytes: int | None = None) -> bytes:
    """The bytes at a bucket and key of the widget store (at most `max_bytes` + 1 of them, so that
    a caller can tell an object over its limit); FileNotFoundError when there is none."""
    storage, name = _located(bucket, key)
    try:
        with storage.open(name, "rb") as stored:
            return stored.read() if max_bytes is None else stored.read(max_bytes + 1)
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


class Undecodable(ValueError):
    """Stored bytes that their `encoding` does not decode, or that decode to more than the limit; the message says which."""


class TooLarge(Undecodable):
    pass


def stored_size_limit(encoding: str, limit: int) -> int:
    """The most bytes an object can hold whose decoded content is at most `limit` bytes: gzip adds
    a few bytes to content it cannot compress, base64 a third and its line breaks."""
    if encoding == "none":
        return limit
    compressed = limit + limit // 1000 + 1024
    return compressed if encoding == "gzip" else compressed * 3 // 2


def check_stored_size(size: int, encoding: str, limit: int) -> None:
    """TooLarge when an object of `size` bytes cannot hold a script of at most `limit` bytes decoded."""
    if size > stored_size_limit(encoding, limit):
        if encoding == "none":
            raise TooLarge(f"the stored script is {size} bytes, more than {limit} bytes (CHAT_WIDGET_SCRIPT_MAX_BYTES)")
        raise TooLarge(
            f"the stored script is {size} bytes encoded ({encoding}), more than a script of at most {limit} bytes "
            "(CHAT_WIDGET_SCRIPT_MAX_BYTES) takes"
        )


def decode(content: bytes, encoding: str, *, limit: int) -> bytes:
    """`webComponent.encoding`: `gzip`, `gzip+base64` (base64 text of gzip) or `none`;
    the result is UTF-8 text of at most `limit` bytes. Decompression stops as soon as it passes
    the limit, so a small object that inflates to gigabytes costs no more than the limit."""
    check_stored_size(len(content), encoding, limit)
    if encoding == "gzip+base64":
        try:
            content = base64.b64decode(b"".join(content.split()), validate=True)
        except (binascii.Error, ValueError):
            raise Undecodable("the stored script is not valid base64 (encoding gzip+base64)") from None
        encoding = "gzip"
    if encoding == "gzip":
        content = _gunzip(content, limit)
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        raise Undecodable("the stored script, decoded, is not UTF-8 text") from None
    return content


def _gunzip(data: bytes, limit: int) -> bytes:
    """The gzip members of `data`, decompressed, at most `limit` bytes in all (TooLarge beyond)."""
    pieces, total = [], 0
    while True:
        member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            piece = member.decompress(data, limit - total + 1)
        except zlib.error:
            raise Undecodable("the stored script is not valid gzip (encoding gzip)") from None
        total += len(piece)
        if total > limit:
            raise TooLarge(f"the stored script decodes to more than {limit} bytes (CHAT_WIDGET_SCRIPT_MAX_BYTES)")
        pieces.append(piece)
        if not member.eof:  # all input read, no end of stream: cut short
            raise Undecodable("the stored script is not valid gzip (encoding gzip)")
        data = member.unused_data
        if not data:
            return b"".join(pieces)


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
