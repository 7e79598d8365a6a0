"""Wire shapes of knowledge bases and documents (docs/api.md, "Knowledge bases"): camelCase on the wire, snake_case
in the models, and every rule of a knowledge base write (the Admin API and the Django admin both
validate with `validate_knowledge_base`)."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from rest_framework import serializers

from chatplatform.api.fields import StrictCharField, check_access_rules
from chatplatform.api.schema import documented, one_of_values
from chatplatform.api.shapes import OutputSerializer
from knowledge.models import DocumentStatus, KnowledgeBase, Mode, Source, Strategy
from knowledge.search import default_mode, effective_mode

# agentId's charset (docs/api.md, "Knowledge bases"); 57 characters so that `search_<id>`, the function the model is
# offered, fits the 64 characters OpenAI allows a function name.
KNOWLEDGE_BASE_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,57}$")
KNOWLEDGE_BASE_ID_RULE = "must be 1 to 57 letters, digits, hyphens or underscores"
DESCRIPTION_MAX = 1000
TOP_K_MAX = 20
QUERY_MAX_CHARS = 2000
SERVER_MANAGED_FIELDS = frozenset({"documentCount", "chunkCount", "createdBy", "lastUpdatedBy", "createDate", "lastUpdate"})
RETRIEVAL_KEYS = frozenset({"strategy", "topK", "mode"})


def _choices(values: type[Any]) -> str:
    return " or ".join(value for value in values.values)


check_knowledge_base_id = RegexValidator(KNOWLEDGE_BASE_ID_PATTERN, KNOWLEDGE_BASE_ID_RULE)


@documented({"type": "object"})
def check_object(value: Any) -> None:
    if not isinstance(value, dict):
        raise serializers.ValidationError("must be an object")


@documented({"type": "integer", "minimum": 1, "maximum": TOP_K_MAX})
def check_top_k(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= TOP_K_MAX:
        raise serializers.ValidationError(f"must be a whole number from 1 to {TOP_K_MAX}")
    return value


def _retrieval_schema() -> dict[str, Any]:
    # Semantic and hybrid modes are offered only where an embedding model is set (as `_retrieval` checks).
    modes = list(Mode.values) if settings.CHAT_EMBEDDING_MODEL else [Mode.LEXICAL.value]
    return {
        "type": "object",
        "properties": {
            "strategy": {"type": "string", "enum": list(Strategy.values)},
            "topK": {"type": "integer", "minimum": 1, "maximum": TOP_K_MAX},
            "mode": {"type": "string", "enum": [*modes, None], "nullable": True},  # null: the default mode
        },
        "additionalProperties": False,
    }


def _checked_in_to_internal_value(value: Any) -> None:
    """Carries `retrieval`'s schema: `_retrieval` checks the value where it maps it to model fields."""


def _retrieval(value: Any) -> dict[str, Any]:
    """`{strategy?, topK?, mode?}` → model fields; absent keys are left out (kept on update)."""
    if not isinstance(value, dict):
        raise serializers.ValidationError("must be an object {strategy?, topK?, mode?}")
    unknown = sorted(set(value) - RETRIEVAL_KEYS)
    if unknown:
        raise serializers.ValidationError({unknown[0]: [f"is not a known field (allowed: {', '.join(sorted(RETRIEVAL_KEYS))})"]})
    fields: dict[str, Any] = {}
    if "strategy" in value:
        if value["strategy"] not in Strategy.values:
            raise serializers.ValidationError({"strategy": [f"must be {_choices(Strategy)}"]})
        fields["strategy"] = value["strategy"]
    if "topK" in value:
        try:
            fields["top_k"] = check_top_k(value["topK"])
        except serializers.ValidationError as exc:
            raise serializers.ValidationError({"topK": exc.detail})
    if "mode" in value:
        mode = value["mode"]
        if mode is not None and mode not in Mode.values:
            raise serializers.ValidationError({"mode": [f"must be {_choices(Mode)}, or null for the default"]})
        if mode is None:
            mode = default_mode()
        if mode in (Mode.SEMANTIC, Mode.HYBRID) and not settings.CHAT_EMBEDDING_MODEL:
            raise serializers.ValidationError({"mode": [f"{mode} search needs an embedding model: set CHAT_EMBEDDING_MODEL"]})
        fields["mode"] = mode
    return fields


class KnowledgeBaseWriteSerializer(serializers.Serializer):
    """A create (knowledgeBaseId, name, description required) or, bound to the stored base with
    `partial=True`, an update of the fields given; the result is checked as a whole."""

    REFUSES_UNKNOWN_FIELDS = True  # but for the server-managed fields, ignored
    # `validate`'s rule: externalId (the provider's id) with source bedrock, and only then.
    REQUEST_SCHEMA_RULES = {
        "anyOf": [
            {
                "properties": {"source": one_of_values(Source.BEDROCK.value), "externalId": {"type": "string", "minLength": 1}},
                "required": ["source", "externalId"],
            },
            {
                "properties": {
                    "source": one_of_values(Source.LOCAL.value),
                    "externalId": {"type": "string", "maxLength": 0, "nullable": True},
                },
            },
        ]
    }

    knowledgeBaseId = StrictCharField(source="knowledge_base_id", max_length=57, validators=[check_knowledge_base_id])
    name = StrictCharField(max_length=200)
    description = StrictCharField(max_length=DESCRIPTION_MAX, help_text="Told to the model: what the collection holds, when to search it.")
    source = serializers.ChoiceField(  # type: ignore[assignment]  # the wire name shadows Field.source
        choices=Source.values, required=False, error_messages={"invalid_choice": f"must be {_choices(Source)}"}
    )
    externalId = StrictCharField(source="external_id", max_length=200, required=False, allow_null=True)
    retrieval = serializers.JSONField(
        required=False,
        validators=[documented(_retrieval_schema())(_checked_in_to_internal_value)],
        help_text="{strategy: tool|always, topK: 1-20, mode: lexical|semantic|hybrid}",
    )
    accessRules = serializers.JSONField(source="access_rules", required=False, allow_null=True, validators=[check_access_rules])

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields) - SERVER_MANAGED_FIELDS)
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a field of a knowledge base"]})
        attrs = super().to_internal_value(data)
        if "retrieval" in attrs:
            try:
                attrs.update(_retrieval(attrs.pop("retrieval")))
            except serializers.ValidationError as exc:
                raise serializers.ValidationError({"retrieval": exc.detail})
        return attrs

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        existing: KnowledgeBase | None = self.instance

        def resulting(name: str, default: Any = None) -> Any:
            return attrs[name] if name in attrs else getattr(existing, name, default)

        if existing is None:
            attrs.setdefault("mode", default_mode())
        source = resulting("source", Source.LOCAL)
        if source == Source.BEDROCK and not resulting("external_id"):
            raise serializers.ValidationError({"externalId": ["is required when source is bedrock (the provider's knowledge base id)"]})
        if source == Source.LOCAL and resulting("external_id"):
            if attrs.get("external_id"):
                raise serializers.ValidationError({"externalId": ["is only for source bedrock"]})
            attrs["external_id"] = None  # back to local: the provider's id no longer applies
        if existing is not None and source != existing.source and existing.documents.exists():
            raise serializers.ValidationError(
                {"source": [f"cannot change from {existing.source} while the knowledge base holds documents: delete them first"]}
            )
        return attrs


def validate_knowledge_base(data: Any, *, existing: KnowledgeBase | None) -> dict[str, Any]:
    """The model fields a write sets, after every rule; ValidationError otherwise."""
    serializer = KnowledgeBaseWriteSerializer(instance=existing, data=data, partial=existing is not None)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class KnowledgeBaseSerializer(OutputSerializer):
    """KnowledgeBase as docs/api.md "Knowledge bases" shows it; `retrieval.mode` is the mode in force. Expects the
    counts annotated (knowledge.selectors.with_counts)."""

    knowledgeBaseId = serializers.CharField(source="knowledge_base_id")
    name = serializers.CharField()
    description = serializers.CharField()
    source = serializers.ChoiceField(choices=Source.choices)  # type: ignore[assignment]  # DRF's metaclass moves declared fields off the class
    externalId = serializers.CharField(source="external_id", allow_null=True)
    retrieval = serializers.SerializerMethodField()
    accessRules = serializers.JSONField(source="access_rules", allow_null=True)
    documentCount = serializers.IntegerField(source="document_count")
    chunkCount = serializers.IntegerField(source="chunk_total")
    createdBy = serializers.CharField(source="created_by")
    lastUpdatedBy = serializers.CharField(source="last_updated_by")
    createDate = serializers.DateTimeField(source="create_date")
    lastUpdate = serializers.DateTimeField(source="last_update")

    def get_retrieval(self, base: KnowledgeBase) -> dict[str, Any]:
        return {"strategy": base.strategy, "topK": base.top_k, "mode": effective_mode(base)}


class DocumentSerializer(OutputSerializer):
    """A document of a knowledge base; `error` only on a failed one."""

    BLANK_AS_NULL = OMIT_WHEN_NULL = ("error",)

    documentId = serializers.CharField(source="document_id")
    title = serializers.CharField()
    sourceUrl = serializers.CharField(source="source_url", allow_null=True)
    mimeType = serializers.CharField(source="mime_type")
    size = serializers.IntegerField()
    status = serializers.ChoiceField(choices=DocumentStatus.choices)
    chunkCount = serializers.IntegerField(source="chunk_count")
    error = serializers.CharField(allow_null=True)
    createDate = serializers.DateTimeField(source="create_date")


# --- request bodies --------------------------------------------------------------------------


class KnowledgeBaseUpsertRequestSerializer(serializers.Serializer):
    knowledgeBase = serializers.JSONField(
        validators=[check_object], help_text="A new knowledge base, or knowledgeBaseId plus the fields to change."
    )
    userId = StrictCharField(required=False, allow_blank=True, help_text="Stamped as createdBy / lastUpdatedBy.")


class KnowledgeBaseSearchRequestSerializer(serializers.Serializer):
    knowledgeBaseIds = serializers.ListField(child=StrictCharField(), required=False, allow_null=True, max_length=1000)
    userId = StrictCharField(required=False, allow_blank=True)


class DocumentJsonSerializer(serializers.Serializer):
    REFUSES_UNKNOWN_FIELDS = True

    title = StrictCharField(max_length=500)
    text = StrictCharField(trim_whitespace=False)
    sourceUrl = StrictCharField(max_length=2000, required=False, allow_null=True)
    mimeType = serializers.ChoiceField(
        choices=["text/plain", "text/markdown", "text/html"],
        required=False,
        error_messages={"invalid_choice": "must be text/plain, text/markdown or text/html (send a PDF as a multipart file)"},
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({unknown[0]: ["is not a field of a document (title, text, sourceUrl, mimeType)"]})
        return super().to_internal_value(data)


class DocumentUploadRequestSerializer(serializers.Serializer):
    document = DocumentJsonSerializer()
    userId = StrictCharField(required=False, allow_blank=True)


class DocumentFormSerializer(serializers.Serializer):
    """The multipart form: `file`, optional `title` (default: the file's name) and `sourceUrl`."""

    file = serializers.FileField(allow_empty_file=True, error_messages={"required": "is required (a multipart file field)"})
    title = StrictCharField(max_length=500, required=False)
    sourceUrl = StrictCharField(max_length=2000, required=False, allow_blank=True)
    userId = StrictCharField(required=False, allow_blank=True)


class QueryRequestSerializer(serializers.Serializer):
    query = StrictCharField(max_length=QUERY_MAX_CHARS)
    topK = serializers.JSONField(required=False, validators=[check_top_k])
    userId = StrictCharField(required=False, allow_blank=True)
