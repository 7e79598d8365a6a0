"""Files' wire shapes (docs/api.md, "Files attached to messages")."""

from __future__ import annotations

from rest_framework import serializers

from agents.serializers import StrictCharField


class ChatMessageFileSerializer(serializers.Serializer):
    """ChatMessageFile: a file attached to a message, as the upload answers it and the message lists it.

    A converse body's `files` lists these; only `fileId` is read from it (the stored file wins)."""

    fileId = serializers.UUIDField()
    fileName = serializers.CharField()
    mimeType = serializers.CharField()
    size = serializers.IntegerField(help_text="bytes")
    url = serializers.CharField(help_text="GET it (as the file's owner) for the file's bytes")


class FileUploadSerializer(serializers.Serializer):
    """`POST /api/chat/files` (multipart/form-data)."""

    file = serializers.FileField(allow_empty_file=False, use_url=False)
    chatAppId = StrictCharField(max_length=128, help_text="The chat app the file is for: its fileUpload feature decides.")
