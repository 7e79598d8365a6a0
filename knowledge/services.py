"""Writes on knowledge bases and their documents (docs/api.md, "Knowledge bases"). The Admin API, the Django admin,
seed_demo and the background task all go through these.

A document becomes searchable in one transaction: its chunks (and vectors) are inserted, it is
marked `indexed`, and the earlier documents with its key are deleted, so a search sees the old
version or the new one, never a mix. Everything that can fail (reading the file, the embedding
model) runs before that transaction; a failure marks the document `failed` with the reason.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django_tasks import task
from rest_framework import serializers

from chatplatform import audit, children, embeddings
from chatplatform.api.errors import ApiError, Code, InvalidRequest, NotFound
from knowledge import ingest, parse, pgvector
from knowledge.models import Chunk, Document, DocumentStatus, KnowledgeBase, Source
from knowledge.serializers import validate_knowledge_base

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

_INSERT_BATCH = 500

# Who uses a knowledge base: functions registered by the apps above this one (agents registers
# "the agents that list it"), since knowledge may not import them (STYLE.md).
UsageCheck = Callable[[str], list[str]]
_usage_checks: list[tuple[str, UsageCheck]] = []


def register_usage_check(kind: str, check: UsageCheck) -> None:
    """`check(knowledge_base_id)` → the ids of the `kind` (e.g. "agents") that use it; a delete is refused while any does."""
    if all(existing is not check for _, existing in _usage_checks):
        _usage_checks.append((kind, check))


# --- knowledge bases ---------------------------------------------------------------------------


def _lock(knowledge_base_id: str) -> KnowledgeBase | None:
    return KnowledgeBase.objects.select_for_update().filter(pk=knowledge_base_id).first()


def _write(existing: KnowledgeBase | None, data: dict[str, Any], *, user_id: str) -> KnowledgeBase:
    try:
        fields = validate_knowledge_base(data, existing=existing)
    except serializers.ValidationError as exc:
        raise serializers.ValidationError({"knowledgeBase": exc.detail})
    if existing is None:
        base = KnowledgeBase(**fields, created_by=user_id, last_updated_by=user_id)
        base.save(force_insert=True)
        audit.record(actor=user_id, instance=base, before=None, after=audit.snapshot(base))
        return base
    changed = {name: value for name, value in fields.items() if getattr(existing, name) != value}
    if changed:
        before = audit.snapshot(existing)
        for name, value in changed.items():
            setattr(existing, name, value)
        existing.last_updated_by = user_id
        existing.save()
        audit.record(actor=user_id, instance=existing, before=before, after=audit.snapshot(existing))
    return existing


def knowledge_base_upsert(*, data: dict[str, Any], user_id: str) -> KnowledgeBase:
    """Create the knowledge base when `knowledgeBaseId` is new, else change only the given fields.
    Raises ValidationError naming `knowledgeBase.<field>` (400) and writes nothing then."""
    base_id = data.get("knowledgeBaseId")
    if not isinstance(base_id, str):
        rule = "is required" if base_id is None else "must be a string"
        raise serializers.ValidationError({"knowledgeBase": {"knowledgeBaseId": [rule]}})
    try:
        with transaction.atomic():
            return _write(_lock(base_id), data, user_id=user_id)
    except IntegrityError:
        pass  # two creates of one new id raced: apply this one as an update of the winner's row
    with transaction.atomic():
        return _write(_lock(base_id), data, user_id=user_id)


def knowledge_base_in_use(*, knowledge_base_id: str) -> str | None:
    """Why the knowledge base may not be deleted (who uses it), or None."""
    for kind, check in _usage_checks:
        users = check(knowledge_base_id)
        if users:
            return f"knowledge base {knowledge_base_id} is used by {kind} {', '.join(sorted(users))}: remove it from them first"
    return None


def knowledge_base_delete(*, knowledge_base_id: str, user_id: str) -> None:
    """Delete the knowledge base, its documents and chunks; refused (400) while anything uses it."""
    with transaction.atomic():
        base = _lock(knowledge_base_id)
        if base is None:
            raise NotFound(f"knowledge base {knowledge_base_id} not found")
        problem = knowledge_base_in_use(knowledge_base_id=knowledge_base_id)
        if problem:
            raise InvalidRequest(problem, field="knowledgeBaseId")
        audit.record(actor=user_id, instance=base, before=audit.snapshot(base), after=None)
        base.delete()


# --- documents ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Indexed:
    spans: list[ingest.Span]
    vectors: np.ndarray | None  # float32, one row per span
    model: str | None


def _key(source_url: str | None, title: str) -> str:
    return hashlib.sha256((f"url:{source_url}" if source_url else f"title:{title}").encode()).hexdigest()


def _parse(data: bytes, mime_type: str) -> list[ingest.Span]:
    """Extract and chunk in a child process (knowledge.parse), within the limits of the settings:
    a hostile file fails its document instead of starving the server (docs/deploy.md)."""
    limits = ingest.Limits(
        text_chars=settings.CHAT_KB_MAX_TEXT_CHARS,
        pages=settings.CHAT_KB_MAX_PAGES,
        decompressed_bytes=settings.CHAT_KB_MAX_DECOMPRESSED_BYTES,
    )
    seconds, memory_mb = settings.CHAT_KB_PARSE_SECONDS, settings.CHAT_KB_PARSE_MEMORY_MB
    try:
        output = children.run("knowledge.parse", data, args=[mime_type, parse.encode_limits(limits)], seconds=seconds, memory_mb=memory_mb)
    except children.TimeLimit:
        raise ingest.ExtractionError(f"reading the document took longer than {seconds:g} s (CHAT_KB_PARSE_SECONDS)") from None
    except children.MemoryLimit:
        raise ingest.ExtractionError(f"reading the document needed more than {memory_mb} MB (CHAT_KB_PARSE_MEMORY_MB)") from None
    except children.ChildFailed as exc:
        raise ingest.ExtractionError(f"the document could not be read: {exc.reason}") from None
    return parse.decode_answer(output)


def _prepare(data: bytes, mime_type: str) -> _Indexed:
    """Extract, chunk and embed (ExtractionError or EmbeddingError); no database."""
    spans = _parse(data, mime_type)
    model = settings.CHAT_EMBEDDING_MODEL
    if model is None:
        return _Indexed(spans, None, None)
    vectors = _embed([(span.heading, span.text) for span in spans], model)
    return _Indexed(spans, vectors, model)


def _embed(chunks: list[tuple[str | None, str]], model: str) -> np.ndarray:
    """One float32 row per (heading, text): the heading is embedded with the text it heads."""
    import numpy as np  # at first use: not when Django starts

    inputs = [f"{heading}\n\n{text}" if heading else text for heading, text in chunks]
    return np.asarray(embeddings.embed(inputs, model=model, purpose="document"), dtype=np.float32)


def _store(document: Document, indexed: _Indexed) -> Document:
    """Make the document searchable (see the module docstring); a document deleted meanwhile,
    or overtaken by a newer upload of its key, is dropped instead."""
    with transaction.atomic():
        KnowledgeBase.objects.select_for_update().filter(pk=document.knowledge_base_id).first()  # one indexer per base at a time
        siblings = Document.objects.filter(knowledge_base_id=document.knowledge_base_id, key=document.key)
        if document.pk is not None:
            if not siblings.filter(pk=document.pk).exists():
                return document  # deleted while it was being indexed
            if siblings.filter(pk__gt=document.pk, status=DocumentStatus.INDEXED).exists():
                Document.objects.filter(pk=document.pk).delete()
                return document  # a later upload of the same key was indexed first
        document.status, document.error, document.content = DocumentStatus.INDEXED, None, None
        document.chunk_count, document.embedding_model = len(indexed.spans), indexed.model
        document.save()
        siblings.filter(pk__lt=document.pk).delete()  # replaced (a re-upload replaces, docs/api.md "Knowledge bases")
        chunks = Chunk.objects.bulk_create(
            [
                Chunk(
                    document=document,
                    knowledge_base_id=document.knowledge_base_id,
                    ordinal=ordinal,
                    heading=span.heading,
                    text=span.text,
                    start=span.start,
                    end=span.end,
                    page=span.page,
                    embedding=indexed.vectors[ordinal].tobytes() if indexed.vectors is not None else None,
                )
                for ordinal, span in enumerate(indexed.spans)
            ],
            batch_size=_INSERT_BATCH,
        )
        if indexed.vectors is not None and pgvector.enabled():
            ids = list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("pk", flat=True)) if chunks else []
            pgvector.store(list(zip(ids, indexed.vectors, strict=True)))
        KnowledgeBase.objects.filter(pk=document.knowledge_base_id).update(index_version=uuid.uuid4())
    return document


def _fail(document: Document, reason: str) -> Document:
    """Record why the document could not be indexed; earlier failures of its key go (the old indexed version stays)."""
    with transaction.atomic():
        document.status, document.error, document.content, document.chunk_count = DocumentStatus.FAILED, reason[:2000], None, 0
        if document.pk is None or Document.objects.filter(pk=document.pk).exists():
            document.save()
            Document.objects.filter(
                knowledge_base_id=document.knowledge_base_id, key=document.key, status=DocumentStatus.FAILED, pk__lt=document.pk
            ).delete()
    return document


def _index(document: Document, data: bytes) -> Document:
    try:
        indexed = _prepare(data, document.mime_type)
    except ingest.ExtractionError as exc:
        return _fail(document, str(exc))
    except embeddings.EmbeddingError as exc:
        return _fail(document, f"the embedding model failed: {exc}")
    return _store(document, indexed)


def document_add(
    *, knowledge_base_id: str, title: str, data: bytes, mime_type: str | None, source_url: str | None, user_id: str
) -> Document:
    """Add a document (docs/api.md, "Knowledge bases"): indexed now when it is small (CHAT_KB_INLINE_INDEX_BYTES),
    else stored `pending` for the background task. 404 unknown base; 413 too large; 400 for a
    type not accepted or a bedrock base. A file that cannot be read is stored `failed`."""
    base = KnowledgeBase.objects.filter(pk=knowledge_base_id).first()
    if base is None:
        raise NotFound(f"knowledge base {knowledge_base_id} not found")
    if base.source != Source.LOCAL:
        raise InvalidRequest(f"knowledge base {knowledge_base_id} is searched in {base.source}: add its documents there", field="file")
    if len(data) > settings.CHAT_KB_MAX_DOCUMENT_BYTES:
        raise ApiError(
            f"file: is {len(data)} bytes; the largest document accepted is {settings.CHAT_KB_MAX_DOCUMENT_BYTES} bytes",
            code=Code.PAYLOAD_TOO_LARGE,
            status_code=413,
        )
    if mime_type not in ingest.ACCEPTED_TYPES:
        raise InvalidRequest(f"type {mime_type or 'unknown'} is not accepted; use one of {', '.join(ingest.ACCEPTED_TYPES)}", field="file")
    title = title.strip()
    if not title:
        raise InvalidRequest("must not be blank", field="title")
    source_url = (source_url or "").strip() or None
    document = Document(
        knowledge_base=base,
        title=title,
        source_url=source_url,
        key=_key(source_url, title),
        mime_type=mime_type,
        size=len(data),
        created_by=user_id,
    )
    if len(data) <= settings.CHAT_KB_INLINE_INDEX_BYTES:
        indexed = _index(document, data)
        audit.record(actor=user_id, instance=indexed, before=None, after=audit.snapshot(indexed))
        return indexed
    with transaction.atomic():
        document.content = data
        document.save()
        audit.record(actor=user_id, instance=document, before=None, after=audit.snapshot(document))
        # After commit, so that a worker in another process finds the row.
        transaction.on_commit(lambda: index_document.enqueue(document.pk))
    return Document.objects.defer("content").get(pk=document.pk)  # indexed already when the tasks backend runs them at once


def document_index(*, document_pk: int) -> str:
    """The background task's work: index a pending document. Idempotent: a document already
    indexed, failed or deleted is left as it is. Its outcome, for the task's result."""
    document = Document.objects.filter(pk=document_pk).first()
    if document is None:
        return "deleted"
    if document.status != DocumentStatus.PENDING or document.content is None:
        return document.status
    return _index(document, bytes(document.content)).status


def document_delete(*, knowledge_base_id: str, document_id: str, user_id: str) -> None:
    """Delete the document and every chunk of it; 404 when the base does not hold it."""
    try:
        document_uuid = uuid.UUID(document_id)
    except ValueError:
        raise NotFound(f"document {document_id} not found in knowledge base {knowledge_base_id}") from None
    with transaction.atomic():
        documents = list(
            Document.objects.select_for_update().defer("content").filter(knowledge_base_id=knowledge_base_id, document_id=document_uuid)
        )
        for document in documents:
            audit.record(actor=user_id, instance=document, before=audit.snapshot(document), after=None)
        deleted, _ = Document.objects.filter(pk__in=[document.pk for document in documents]).delete()
        if not deleted:
            if not KnowledgeBase.objects.filter(pk=knowledge_base_id).exists():
                raise NotFound(f"knowledge base {knowledge_base_id} not found")
            raise NotFound(f"document {document_id} not found in knowledge base {knowledge_base_id}")
        KnowledgeBase.objects.filter(pk=knowledge_base_id).update(index_version=uuid.uuid4())


def documents_to_reembed(*, model: str, knowledge_base_id: str | None = None, every: bool = False) -> list[Document]:
    """The indexed local documents whose vectors are not `model`'s (all of them with `every`)."""
    documents = Document.objects.defer("content").filter(status=DocumentStatus.INDEXED, knowledge_base__source=Source.LOCAL)
    if knowledge_base_id is not None:
        documents = documents.filter(knowledge_base_id=knowledge_base_id)
    if not every:
        documents = documents.exclude(embedding_model=model)
    return list(documents.order_by("knowledge_base_id", "pk"))


def document_reembed(*, document: Document, model: str) -> int:
    """Embed an indexed document's chunks again with `model` (after CHAT_EMBEDDING_MODEL changed):
    the text embedded is the chunks' own, so the upload is not needed. The number of chunks
    embedded; 0 when the document was deleted or replaced meanwhile. EmbeddingError leaves it as it was."""
    chunks = list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("pk", "heading", "text"))
    vectors = _embed([(heading, text) for _, heading, text in chunks], model) if chunks else None
    with transaction.atomic():
        KnowledgeBase.objects.select_for_update().filter(pk=document.knowledge_base_id).first()  # one indexer per base at a time
        current = list(Chunk.objects.filter(document=document).order_by("ordinal").values_list("pk", flat=True))
        if vectors is None or current != [pk for pk, _, _ in chunks]:
            return 0
        Chunk.objects.bulk_update(
            [Chunk(pk=pk, embedding=vector.tobytes()) for pk, vector in zip(current, vectors, strict=True)],
            ["embedding"],
            batch_size=_INSERT_BATCH,
        )
        Document.objects.filter(pk=document.pk).update(embedding_model=model)
        if pgvector.enabled():
            pgvector.store(list(zip(current, vectors, strict=True)))
        KnowledgeBase.objects.filter(pk=document.knowledge_base_id).update(index_version=uuid.uuid4())
    return len(current)


@task()
def index_document(document_pk: int) -> str:
    """Index a pending document too large to index within its upload request (django-tasks: run
    in-process by the embedded backend, by a worker otherwise); safe to run twice (document_index)."""
    return document_index(document_pk=document_pk)
