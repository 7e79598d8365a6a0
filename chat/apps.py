from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_delete, post_save


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        from agents.models import AgentDefinition
        from chat.chat_apps.features import InvalidFeatures, validate_features
        from chat.chat_apps.models import ChatApp
        from chat.governance.services import sessions_deleted
        from chat.turn import replay
        from chat.turn.definitions import turn_definitions
        from chatplatform.env import malformed
        from knowledge.models import KnowledgeBase
        from tools.models import ToolDefinition

        # A malformed site-wide feature (a usage limit, say) would break every turn: refused at start-up.
        try:
            validate_features(settings.CHAT_SITE_FEATURES)
        except InvalidFeatures as error:
            raise malformed("CHAT_SITE_FEATURES", str(error)) from None

        # Signals, not the services: the API, the admin, commands and cleanup all save through the models.
        for model in (ChatApp, AgentDefinition, ToolDefinition, KnowledgeBase):
            post_save.connect(turn_definitions.invalidate, sender=model, dispatch_uid=f"turn-definitions-{model.__name__}-save")
            post_delete.connect(turn_definitions.invalidate, sender=model, dispatch_uid=f"turn-definitions-{model.__name__}-delete")
        # Deleted sessions' kept stream events go with them (docs/data.md): replay is above governance.
        sessions_deleted.connect(replay.forget_deleted, dispatch_uid="turn-events-of-deleted-sessions")
