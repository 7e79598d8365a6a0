from __future__ import annotations

from django.apps import AppConfig


class ChatPlatformConfig(AppConfig):
    name = "chatplatform"

    def ready(self) -> None:
        from chatplatform import (
            checks,  # noqa: F401  (registers the deployment checks)
            signin,  # noqa: F401  (counts failed sign-ins)
        )
