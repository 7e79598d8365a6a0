"""`python manage.py knowledge_reembed [--knowledge-base ID] [--all] [--dry-run]`: give the indexed
documents vectors of the current CHAT_EMBEDDING_MODEL (README "Knowledge bases")."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from chatplatform import embeddings
from knowledge import services


class Command(BaseCommand):
    help = (
        "Embed again, with CHAT_EMBEDDING_MODEL, the chunks of indexed documents whose vectors come from no model or "
        "another one (documents uploaded before the model was set or changed), so semantic and hybrid search find them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--knowledge-base", dest="knowledge_base", help="only this knowledge base's documents")
        parser.add_argument("--all", action="store_true", help="every indexed document, even those already embedded by the model")
        parser.add_argument("--dry-run", action="store_true", help="list the documents that would be embedded, change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        model = settings.CHAT_EMBEDDING_MODEL
        if not model:
            raise CommandError("CHAT_EMBEDDING_MODEL is not set: there is no model to embed with")
        documents = services.documents_to_reembed(model=model, knowledge_base_id=options["knowledge_base"], every=options["all"])
        if options["dry_run"]:
            for document in documents:
                self.stdout.write(f"{document.knowledge_base_id}: {document.title} ({document.chunk_count} chunks)")
            self.stdout.write(f"{len(documents)} documents would be embedded with {model}; nothing changed (dry run)")
            return
        embedded, failed = 0, []
        for document in documents:
            try:
                chunks = services.document_reembed(document=document, model=model)
            except embeddings.EmbeddingError as exc:
                failed.append(f"{document.knowledge_base_id}: {document.title}: {exc}")
                continue
            embedded += bool(chunks)
            self.stdout.write(f"{document.knowledge_base_id}: {document.title}: {chunks} chunks embedded")
        self.stdout.write(f"{embedded} documents embedded with {model}")
        if failed:
            raise CommandError("the embedding model failed for:\n" + "\n".join(failed))
