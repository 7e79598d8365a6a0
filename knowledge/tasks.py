"""Background tasks of knowledge bases (django-tasks): indexing the documents too large to index
within their upload request. Run in-process by the embedded backend, by a worker otherwise."""

from __future__ import annotations

from django_tasks import task

from knowledge import services


@task()
def index_document(document_pk: int) -> str:
    """Index a pending document; safe to run twice (see services.document_index)."""
    return services.document_index(document_pk=document_pk)
