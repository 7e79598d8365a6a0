"""`python manage.py store_put BUCKET KEY FILE [--encode gzip|gzip+base64|none]`: put a file into the
widget store, where a web component definition's `storeBucket`/`storeKey` find it (docs/widgets.md)."""

from __future__ import annotations

import base64
import gzip
import sys
from pathlib import Path
from typing import Any

from django.core.exceptions import SuspiciousFileOperation
from django.core.files.storage import storages
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatplatform.storage import WIDGET_STORE, store_write

ENCODINGS = ("none", "gzip", "gzip+base64")


def encoded(content: bytes, encoding: str) -> bytes:
    """The bytes as a definition with this `encoding` expects to find them in the store."""
    if encoding == "none":
        return content
    # mtime=0: the same file always gives the same bytes (and the same ETag once served).
    compressed = gzip.compress(content, mtime=0)
    return base64.b64encode(compressed) if encoding == "gzip+base64" else compressed


class Command(BaseCommand):
    help = (
        "Put FILE into the widget store at BUCKET/KEY (replacing what is there), for a web component "
        "tag definition whose webComponent names that storeBucket and storeKey. --encode encodes the "
        "file on the way in to match the definition's encoding; without it the bytes are stored as they are. "
        "--list BUCKET lists what the store holds under a bucket."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bucket")
        parser.add_argument("key", nargs="?")
        parser.add_argument("file", nargs="?", help="the file to store; - reads standard input")
        parser.add_argument("--encode", choices=ENCODINGS, help="encode the file as the definition's encoding says")
        parser.add_argument("--list", dest="list_only", action="store_true", help="list the keys stored under BUCKET instead")

    def handle(
        self, *args: Any, bucket: str, key: str | None, file: str | None, encode: str | None, list_only: bool, **options: Any
    ) -> None:
        if list_only:
            self._list(bucket)
            return
        if not key or not file:
            raise CommandError("give BUCKET KEY FILE (or --list BUCKET)")
        if file == "-":
            content = sys.stdin.buffer.read()
        else:
            path = Path(file)
            if not path.is_file():
                raise CommandError(f"{file}: no such file")
            content = path.read_bytes()
        content = encoded(content, encode or "none")
        try:
            name = store_write(bucket=bucket, key=key, content=content)
        except SuspiciousFileOperation as exc:
            raise CommandError(f"{bucket}/{key} is not a usable store name: {exc}") from None
        self.stdout.write(f"stored {name} ({len(content)} bytes{', ' + encode if encode else ''})")

    def _list(self, bucket: str) -> None:
        storage = storages[WIDGET_STORE]
        pending = [bucket]
        while pending:
            folder = pending.pop()
            directories, files = storage.listdir(folder)
            pending.extend(f"{folder}/{name}" for name in directories)
            for name in files:
                self.stdout.write(f"{folder}/{name}\t{storage.size(f'{folder}/{name}')}")
