from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "knowledge bases"

    def ready(self) -> None:
        from knowledge import pgvector  # noqa: F401  (detects pgvector when the first connection opens)
