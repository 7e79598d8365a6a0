"""Files' wire shapes (docs/api.md, "Files attached to messages")."""

from __future__ import annotations

from rest_framework import serializers

from agents.serializers import StrictCharField
from chatplatform.api.shapes import OutputSerializer


class ChatMessageFileSerializer(OutputSerializer):
    """ChatMessageFile: a file attached to a message, as the upload answers it, the message stores
    and lists it, and the export gives it.

    A converse body's `files` lists these; only `fileId` is read from it (the stored file wins)."""

    fileId = serializers.UUIDField(source="file_id")
    fileName = serializers.CharField(source="name")
    mimeType = serializers.CharField(source="mime_type")
    size = serializers.IntegerField(help_text="bytes")
    url = serializers.CharField(source="content_url", help_text="GET it (as the file's owner) for the file's bytes")


class FileUploadSerializer(serializers.Serializer):
    """`POST /api/chat/files` (multipart/form-data)."""

    file = serializers.FileField(allow_empty_file=False, use_url=False)
    chatAppId = StrictCharField(max_length=128, help_text="The chat app the file is for: its fileUpload feature decides.")
