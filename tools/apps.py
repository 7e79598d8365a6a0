from __future__ import annotations

from django.apps import AppConfig


class ToolsConfig(AppConfig):
    name = "tools"
    verbose_name = "Tools"

    def ready(self) -> None:
        # Fill the local function registry at start-up, so `local:` tools validate and run in every
        # process (server, worker, management commands) without a request having imported them first.
        from tools import functions  # noqa: F401
