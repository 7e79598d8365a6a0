"""Knowledge bases (docs/api.md, "Knowledge bases"): collections of documents the platform indexes and searches
itself (`local`), or an index of a provider it queries (`bedrock`).

A document is cut into chunks; each chunk is one exact span of the document's text (markup of
HTML removed, a PDF's text layer), with its position kept for citations. The lexical index of the
chunks is not a Django field: on SQLite it is an FTS5 table kept in step by triggers, on
PostgreSQL a generated `tsvector` column with a GIN index (migration 0001 creates either).
"""

from __future__ import annotations

import uuid

from django.db import models


class Source(models.TextChoices):
    LOCAL = "local", "Local (documents stored and indexed here)"
    BEDROCK = "bedrock", "Bedrock (the provider's Retrieve API)"


class Strategy(models.TextChoices):
    TOOL = "tool", "Offered to the model as a search function"
    ALWAYS = "always", "Searched with the user's message before the model is called"


class Mode(models.TextChoices):
    LEXICAL = "lexical", "Lexical (full-text)"
    SEMANTIC = "semantic", "Semantic (embeddings)"
    HYBRID = "hybrid", "Hybrid (reciprocal rank fusion)"


class DocumentStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    INDEXED = "indexed", "Indexed"
    FAILED = "failed", "Failed"


class KnowledgeBase(models.Model):
    """A named collection an agent lists in `knowledgeBases`; `description` is told to the model.

    `mode` is set when the base is created: hybrid when an embedding model is configured, else
    lexical (docs/api.md, "Knowledge bases"), so configuring a model later does not change existing bases.
    `index_version` is replaced on every change of its chunks, so a process's cached vectors know
    they are stale (a new random value, not a counter: a counter repeats after a rollback).
    """

    knowledge_base_id = models.CharField("knowledgeBaseId", max_length=57, primary_key=True)
    name = models.CharField(max_length=200)
    description = models.TextField()
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.LOCAL)
    external_id = models.CharField(max_length=200, null=True, blank=True)
    strategy = models.CharField(max_length=10, choices=Strategy.choices, default=Strategy.TOOL)
    top_k = models.PositiveSmallIntegerField(default=5)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.LEXICAL)
    access_rules = models.JSONField(null=True, blank=True)
    index_version = models.UUIDField(default=uuid.uuid4, editable=False)
    created_by = models.CharField(max_length=255, editable=False)
    last_updated_by = models.CharField(max_length=255, editable=False)
    create_date = models.DateTimeField(auto_now_add=True)
    last_update = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "knowledge base"
        ordering = ["knowledge_base_id"]

    def __str__(self) -> str:
        return self.knowledge_base_id


class Document(models.Model):
    """One uploaded document. `key` is the SHA-256 of its sourceUrl, else of its title: a later
    upload with the same key replaces it once the later one is indexed. `content` holds the upload only until the
    background task has indexed it."""

    document_id = models.UUIDField("documentId", default=uuid.uuid4, unique=True, editable=False)
    # No index of its own: the composite indexes below start with it.
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="documents", db_index=False)
    title = models.CharField(max_length=500)
    source_url = models.CharField(max_length=2000, null=True, blank=True)
    key = models.CharField(max_length=64, editable=False)
    mime_type = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()
    status = models.CharField(max_length=10, choices=DocumentStatus.choices, default=DocumentStatus.PENDING)
    chunk_count = models.PositiveIntegerField(default=0)
    error = models.TextField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, null=True, blank=True)
    content = models.BinaryField(null=True, editable=False)
    created_by = models.CharField(max_length=255, editable=False)
    create_date = models.DateTimeField(auto_now_add=True)
    last_update = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-create_date", "-id"]
        indexes = [
            # The documents list of a knowledge base, newest first.
            models.Index(fields=["knowledge_base", "-create_date"], name="knowledge_doc_list"),
            # Re-upload: the other documents with the same key.
            models.Index(fields=["knowledge_base", "key"], name="knowledge_doc_key"),
        ]

    def __str__(self) -> str:
        return self.title


class Chunk(models.Model):
    """An exact span [start, end) of its document's text, in reading order (`ordinal`).

    `heading` is the path of headings the span sits under ("Install > Linux"), `page` the PDF page
    it starts on. `embedding` is float32 bytes from `embedding_model` of its document, or null.
    Rows are only inserted and deleted (the SQLite FTS triggers assume so), never updated.
    """

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks", db_index=False)  # see the constraint
    # Indexed (Django's foreign-key index): lexical and vector search filter a knowledge base's chunks.
    knowledge_base = models.ForeignKey(KnowledgeBase, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading = models.TextField(blank=True, default="")
    text = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    page = models.PositiveIntegerField(null=True, blank=True)
    embedding = models.BinaryField(null=True)

    class Meta:
        ordering = ["document", "ordinal"]
        constraints = [
            # Also the index of a document's chunks in order.
            models.UniqueConstraint(fields=["document", "ordinal"], name="knowledge_chunk_position"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"
