from django.apps import AppConfig


class AgentsConfig(AppConfig):
    name = "agents"

    def ready(self) -> None:
        from agents.selectors import agents_listing_knowledge_base
        from knowledge.services import register_usage_check

        # knowledge may not import agents (STYLE.md): it asks this before deleting a knowledge base.
        register_usage_check("agents", agents_listing_knowledge_base)
