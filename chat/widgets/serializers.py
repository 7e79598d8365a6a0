"""Widget data's wire shape (docs/api.md, "Widgets")."""

from __future__ import annotations

from rest_framework import serializers

from agents.serializers import StrictCharField
from chat.users.serializers import check_json_object
from chatplatform.api.fields import StrictBooleanField


class WidgetDataWriteSerializer(serializers.Serializer):
    """`POST /api/chat/widget-data/<scope>/<tag>` (docs/api.md, "Widgets")."""

    userId = StrictCharField(required=False, allow_blank=True)
    data = serializers.JSONField(  # type: ignore[assignment]  # the wire name shadows Serializer.data
        validators=[check_json_object], help_text="a JSON object; at most 400 KB serialized (after a partial merge)"
    )
    partial = StrictBooleanField(required=False, default=False, help_text="merge top-level keys into the stored object")  # type: ignore[assignment]  # the wire name shadows Serializer.partial
