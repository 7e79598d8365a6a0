"""Storing an uploaded file: its type checked against the chat app's fileUpload feature, its bytes
in the `chat_files` storage under its id."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.core.files.uploadedfile import UploadedFile

from chat.chat_apps.selectors import chat_app_features, chat_app_for_use
from chat.files import content as chat_files
from chat.files.models import ChatFile
from chat.users.models import ChatUser
from chatplatform.api.errors import ApiError, InvalidRequest

# --- Files attached to messages ---------------------------------------------------------------------


def _file_name(name: str) -> str:
    """The name a browser gave, without any path, control characters or excess length."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(ch for ch in base if ch.isprintable()).strip()
    return cleaned[-255:] or "file"


def file_store(*, user: ChatUser, chat_app_id: str, upload: UploadedFile) -> ChatFile:
    """Store a file `user` uploads to attach to a message in `chat_app_id`.

    404/403 as converse for the chat app; 400 when its fileUpload feature is off, the type is not
    in its `mimeTypesAllowed`, or the bytes do not match the type; 413 beyond CHAT_UPLOAD_MAX_BYTES.
    The bytes are written first and removed again if the record cannot be, so nothing half-stored stays.
    """
    app = chat_app_for_use(chat_app_id=chat_app_id, user=user)
    enabled, allowed = chat_files.file_upload_settings(chat_app_features(app))
    if not enabled:
        raise InvalidRequest(f"file upload is not enabled in chat app {app.pk}", field="chatAppId")
    limit = settings.CHAT_UPLOAD_MAX_BYTES
    if upload.size is not None and upload.size > limit:
        raise ApiError(f"file: must be at most {_size_text(limit)} (this one is {_size_text(upload.size)})", status_code=413)
    name = _file_name(upload.name or "")
    mime_type = chat_files.mime_type_of(upload.content_type, name)
    if not chat_files.is_allowed(mime_type, allowed):
        raise InvalidRequest(f"{mime_type} files are not allowed in this chat app (allowed: {', '.join(allowed)})", field="file")
    content = upload.read()
    try:
        chat_files.check_content(mime_type, content)
    except chat_files.FileRefused as exc:
        raise InvalidRequest(str(exc), field="file") from None
    file_id = uuid.uuid4()
    storage = storages["chat_files"]
    stored_as = storage.save(file_id.hex, ContentFile(content))
    try:
        return ChatFile.objects.create(
            file_id=file_id, user=user, chat_app_id=app.pk, name=name, mime_type=mime_type, size=len(content), storage_name=stored_as
        )
    except Exception:
        storage.delete(stored_as)
        raise


def _size_text(size: int) -> str:
    for unit, factor in (("MB", 1024 * 1024), ("KB", 1024)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"
