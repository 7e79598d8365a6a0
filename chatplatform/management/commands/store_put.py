"""`python manage.py store_put BUCKET KEY FILE [--encode gzip|gzip+base64|none]`: put a file into the
widget store, where a web component definition's `storeBucket`/`storeKey` find it (docs/widgets.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatplatform.storage import ENCODINGS, TooLarge, decode, encode, store_list, store_write

# How stored bytes announce their encoding when --encode does not say: gzip's magic number, and
# the same three bytes in base64.
_SNIFFED = ((b"\x1f\x8b", "gzip"), (b"H4sI", "gzip+base64"))


class Command(BaseCommand):
    help = (
        "Put FILE into the widget store at BUCKET/KEY (replacing what is there), for a web component "
        "tag definition whose webComponent names that storeBucket and storeKey. --encode encodes the "
        "file on the way in to match the definition's encoding; without it the bytes are stored as they are. "
        "--list BUCKET lists what the store holds under a bucket. A script that decodes to more than "
        "CHAT_WIDGET_SCRIPT_MAX_BYTES is refused."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bucket")
        parser.add_argument("key", nargs="?")
        parser.add_argument("file", nargs="?", help="the file to store; - reads standard input")
        parser.add_argument("--encode", dest="encode_as", choices=ENCODINGS, help="encode the file as the definition's encoding says")
        parser.add_argument("--list", dest="list_only", action="store_true", help="list the keys stored under BUCKET instead")

    def handle(
        self, *args: Any, bucket: str, key: str | None, file: str | None, encode_as: str | None, list_only: bool, **options: Any
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
        content = encode(content, encode_as or "none")
        encoding = encode_as or next((name for magic, name in _SNIFFED if content.startswith(magic)), "none")
        try:
            # What the platform would refuse to serve is refused here, before anything is stored.
            decode(content, encoding, limit=settings.CHAT_WIDGET_SCRIPT_MAX_BYTES)
        except TooLarge as exc:
            raise CommandError(f"{bucket}/{key} refused: {exc}") from None
        except ValueError:
            pass  # bytes the sniffed encoding does not fit are stored as they are, as before
        try:
            name = store_write(bucket=bucket, key=key, content=content)
        except SuspiciousFileOperation as exc:
            raise CommandError(f"{bucket}/{key} is not a usable store name: {exc}") from None
        self.stdout.write(f"stored {name} ({len(content)} bytes{', ' + encode_as if encode_as else ''})")

    def _list(self, bucket: str) -> None:
        for key, size in store_list(bucket=bucket):
            self.stdout.write(f"{bucket}/{key}\t{size}")
