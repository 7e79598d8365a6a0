"""Reads on files: only their owner's, and what a turn gives the model of them."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.files.storage import storages

from chat.files import content as chat_files
from chat.files.models import ChatFile
from chat.users.models import ChatUser
from chatplatform.api.errors import InvalidRequest, NotFound

# --- files attached to messages --------------------------------------------------------------------


def file_get(*, file_id: Any, user: ChatUser) -> ChatFile:
    """The user's own file; anyone else's, like an unknown id, is 404 NOT_FOUND (never readable)."""
    try:
        pk = uuid.UUID(str(file_id))
    except ValueError:
        raise NotFound(f"file {file_id} not found") from None
    file = ChatFile.objects.filter(pk=pk, user=user).first()
    if file is None:
        raise NotFound(f"file {file_id} not found")
    return file


def message_files(*, user: ChatUser, files: list[Any], features: dict[str, Any]) -> list[ChatFile]:
    """The stored files a converse body's `files` name, checked for the turn.

    `files` is the body's list of ChatMessageFile (only `fileId` is read; the rest is what the
    client was given at upload, and the stored record wins). `features` are the chat app's
    resolved features. 400 when upload is off there, an entry has no valid `fileId`, a file is
    named twice, or its type is no longer allowed; 404 NOT_FOUND for an unknown file or another
    user's. Returns them in the body's order; `ChatMessageFileSerializer` renders what the message stores.
    """
    if not files:
        return []
    enabled, allowed = chat_files.file_upload_settings(features)
    if not enabled:
        raise InvalidRequest("file upload is not enabled in this chat app", field="files")
    ids: list[uuid.UUID] = []
    for index, entry in enumerate(files):
        raw = entry.get("fileId") if isinstance(entry, dict) else None
        try:
            ids.append(uuid.UUID(raw))
        except (ValueError, TypeError, AttributeError):  # not a string, or not a UUID
            raise InvalidRequest("must be the fileId of an uploaded file", field=f"files[{index}].fileId") from None
        if ids[-1] in ids[:-1]:
            raise InvalidRequest(f"names file {raw} a second time", field=f"files[{index}]")
    stored = {file.pk: file for file in ChatFile.objects.filter(pk__in=ids, user=user)}
    for index, pk in enumerate(ids):
        file = stored.get(pk)
        if file is None:
            raise NotFound(f"files[{index}]: file {pk} not found")
        if not chat_files.is_allowed(file.mime_type, allowed):
            raise InvalidRequest(f"{file.mime_type} files are not allowed in this chat app", field=f"files[{index}]")
    return [stored[pk] for pk in ids]


def file_content(file: ChatFile) -> bytes:
    """The file's bytes, from the `chat_files` storage."""
    with storages["chat_files"].open(file.storage_name, "rb") as stored:
        return stored.read()


def file_model_input(file: ChatFile) -> chat_files.ModelInput:
    """The file as a model receives it: text as text, images as image input (chat.files.ModelInput)."""
    return chat_files.model_input(file_name=file.name, mime_type=file.mime_type, content=file_content(file))
