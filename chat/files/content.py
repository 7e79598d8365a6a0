"""Rules of the files people attach to messages (docs/api.md, "Files attached to messages"): which types a chat app takes, what a
file's bytes must look like for its type, and how a file reaches a model (text as text, images
as image input). No database access here: chat.services stores files, chat.selectors reads them.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from typing import Any, Literal

from chat.chat_apps.features import is_enabled

# When a chat app turns fileUpload on without `mimeTypesAllowed`: types every model can take.
DEFAULT_MIME_TYPES = ("text/plain", "text/markdown", "text/csv", "application/json", "image/png", "image/jpeg", "image/gif", "image/webp")

# Text that is not text/*; such files are given to the model as text.
_TEXT_APPLICATION_TYPES = frozenset({"application/json", "application/xml", "application/yaml", "application/x-yaml", "application/csv"})

# Images a model takes as image input, by the bytes they start with (a file of another kind sent
# as image/png would fail at the provider, or worse, be served back as an image).
_IMAGE_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}

# Raster images are shown inline by the page; every other file is downloaded (an SVG or HTML file
# opened inline could run script in the platform's origin).
INLINE_MIME_TYPES = frozenset(_IMAGE_SIGNATURES)


class FileRefused(ValueError):
    """A file this chat app does not take, or whose bytes do not match its type; the message says which."""


def file_upload_settings(features: dict[str, Any]) -> tuple[bool, tuple[str, ...]]:
    """(enabled, allowed MIME patterns) of a chat app's resolved features."""
    if not is_enabled(features, "fileUpload"):
        return False, ()
    allowed = features["fileUpload"].get("mimeTypesAllowed") or DEFAULT_MIME_TYPES
    return True, tuple(allowed)


def mime_type_of(declared: str | None, file_name: str) -> str:
    """The file's MIME type: as the browser declared it (without parameters), or guessed from its
    name when it declared none or only application/octet-stream."""
    mime = (declared or "").split(";")[0].strip().lower()
    if not mime or mime == "application/octet-stream":
        guessed, _ = mimetypes.guess_type(file_name, strict=False)
        mime = (guessed or "application/octet-stream").lower()
    return mime


def is_allowed(mime_type: str, allowed: tuple[str, ...]) -> bool:
    """`image/*` takes every image type; any other pattern one exact type."""
    family = mime_type.split("/")[0] + "/*"
    return mime_type in allowed or family in allowed


def is_text(mime_type: str) -> bool:
    return mime_type.startswith("text/") or mime_type in _TEXT_APPLICATION_TYPES or mime_type.endswith(("+json", "+xml"))


def check_content(mime_type: str, content: bytes) -> None:
    """Text must be UTF-8; the images a model takes must start as their type does."""
    if not content:
        raise FileRefused("is empty")
    if is_text(mime_type):
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            raise FileRefused(f"is not UTF-8 text, as {mime_type} must be") from None
    signatures = _IMAGE_SIGNATURES.get(mime_type)
    if signatures and not (content.startswith(signatures) and (mime_type != "image/webp" or content[8:12] == b"WEBP")):
        raise FileRefused(f"is not a {mime_type.split('/')[1].upper()} image")


@dataclass(frozen=True, slots=True)
class ModelInput:
    """A file as a model receives it: `text` for text files, `image` (bytes and MIME type) for the
    images models accept, `other` for anything else (the turn names the file without its bytes)."""

    kind: Literal["text", "image", "other"]
    file_name: str
    mime_type: str
    text: str | None = None
    data: bytes | None = None


def model_input(*, file_name: str, mime_type: str, content: bytes) -> ModelInput:
    if is_text(mime_type):
        return ModelInput("text", file_name, mime_type, text=content.decode("utf-8", errors="replace"))
    if mime_type in _IMAGE_SIGNATURES:
        return ModelInput("image", file_name, mime_type, data=content)
    return ModelInput("other", file_name, mime_type)
