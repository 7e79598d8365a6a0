"""Files users attach to messages (docs/api.md, "Files attached to messages")."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.files.storage import storages
from django.db import models, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from chat.users.models import ChatUser

# --- Files attached to messages -----------------------------------------------------------------


class ChatFile(models.Model):
    """A file a user uploaded to attach to a message (ChatMessageFile on the wire).

    The bytes live in the `chat_files` storage (local files, or an S3-compatible bucket) under a
    name made of the file's id only: nothing a user typed reaches a path or a key. Only its owner
    reads it back (GET /api/chat/files/{fileId}/content).
    """

    file_id = models.UUIDField("fileId", primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(ChatUser, on_delete=models.CASCADE, related_name="chat_files")
    chat_app_id = models.CharField("chatAppId", max_length=128)
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    storage_name = models.CharField(max_length=255, editable=False)
    create_date = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "chat file"
        ordering = ["-create_date"]

    def __str__(self) -> str:
        return f"{self.name} ({self.file_id})"

    @property
    def content_url(self) -> str:
        """Where its owner GETs the bytes."""
        return f"/api/chat/files/{self.file_id}/content"


@receiver(post_delete, sender=ChatFile)
def _delete_stored_bytes(sender: type[ChatFile], instance: ChatFile, **kwargs: Any) -> None:
    # Once the delete commits: a rolled-back delete (retention, erasure) keeps the record's bytes.
    name = instance.storage_name
    transaction.on_commit(lambda: storages["chat_files"].delete(name))
