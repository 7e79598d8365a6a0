"""Admin API of knowledge bases (docs/api.md, "Knowledge bases"). Views parse, call a service or selector, render."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiRequest, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from chatplatform.api.bodies import JSONParser
from chatplatform.api.errors import ApiError, Code
from chatplatform.api.fields import StrictCharField
from chatplatform.api.permissions import caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, checked, ok
from knowledge import ingest, selectors, services
from knowledge.serializers import (
    DocumentFormSerializer,
    DocumentSerializer,
    DocumentUploadRequestSerializer,
    KnowledgeBaseSearchRequestSerializer,
    KnowledgeBaseSerializer,
    KnowledgeBaseUpsertRequestSerializer,
    KnowledgeBaseWriteSerializer,
    QueryRequestSerializer,
)

_USER_ID = StrictCharField(required=False, allow_blank=True)  # as the request serializer's userId
_ID = OpenApiParameter("knowledgeBaseId", str, OpenApiParameter.PATH)
_Success = envelope("KnowledgeBaseDeleteResponse")
_KnowledgeBaseResponse = envelope("KnowledgeBaseResponse", knowledgeBase=KnowledgeBaseSerializer())
_DocumentResponse = envelope("DocumentResponse", document=DocumentSerializer())
_ResultSerializer = inline_serializer(
    "KnowledgeBaseResult",
    {
        "documentId": serializers.CharField(),
        "title": serializers.CharField(),
        "sourceUrl": serializers.CharField(allow_null=True),
        "chunkId": serializers.CharField(),
        "text": serializers.CharField(),
        "score": serializers.FloatField(),
    },
    many=True,
)
# Multipart framing around the file; anything larger than the document limit plus this is refused unread.
_MULTIPART_SLACK = 64 * 1024


def _stamp(request: Request, user_id: str | None) -> str:
    """Audit stamps come from the request's userId, else the caller (docs/api.md, "Who may read what")."""
    return user_id or caller_id(request)


def _render(base_id: str) -> dict:
    return KnowledgeBaseSerializer(selectors.knowledge_base_get(knowledge_base_id=base_id)).data


class KnowledgeBaseAdminViewSet(AdminApiViewSet):
    """`/knowledge-base`, `/knowledge-base/{id}`, `/knowledge-bases/search`, `/knowledge-base/{id}/query`."""

    @extend_schema(
        operation_id="knowledge_base_upsert",
        request=inline_serializer(
            "KnowledgeBaseUpsertRequest",
            {"knowledgeBase": KnowledgeBaseWriteSerializer(), "userId": _USER_ID},
        ),
        responses=_KnowledgeBaseResponse,
        description="Create the knowledge base when knowledgeBaseId is new, else change the fields given.",
    )
    def upsert(self, request: Request) -> Response:
        body = checked(KnowledgeBaseUpsertRequestSerializer, request.data)
        base = services.knowledge_base_upsert(data=body["knowledgeBase"], user_id=_stamp(request, body.get("userId")))
        return ok(knowledgeBase=_render(base.pk))

    @extend_schema(operation_id="knowledge_base_get", parameters=[_ID], responses=_KnowledgeBaseResponse)
    def retrieve(self, request: Request, knowledgeBaseId: str) -> Response:
        return ok(knowledgeBase=_render(knowledgeBaseId))

    @extend_schema(operation_id="knowledge_base_delete", parameters=[_ID], responses=_Success)
    def destroy(self, request: Request, knowledgeBaseId: str) -> Response:
        services.knowledge_base_delete(knowledge_base_id=knowledgeBaseId, user_id=caller_id(request))
        return ok()

    @extend_schema(
        operation_id="knowledge_bases_search",
        request=KnowledgeBaseSearchRequestSerializer,
        responses=envelope("KnowledgeBaseSearchResponse", knowledgeBases=KnowledgeBaseSerializer(many=True)),
    )
    def search(self, request: Request) -> Response:
        body = checked(KnowledgeBaseSearchRequestSerializer, request.data)
        bases = selectors.knowledge_bases_search(knowledge_base_ids=body.get("knowledgeBaseIds"))
        return ok(knowledgeBases=KnowledgeBaseSerializer(bases, many=True).data)

    @extend_schema(
        operation_id="knowledge_base_query",
        parameters=[_ID],
        request=QueryRequestSerializer,
        responses=envelope("KnowledgeBaseQueryResponse", results=_ResultSerializer),
        description="The results a model would get for this query, best first.",
    )
    def query(self, request: Request, knowledgeBaseId: str) -> Response:
        body = checked(QueryRequestSerializer, request.data)
        try:
            results = selectors.search(knowledge_base=knowledgeBaseId, query=body["query"], top_k=body.get("topK"))
        except selectors.SearchError as exc:
            # The provider failed, not the request (as a model failure of a turn).
            raise ApiError(f"the search failed: {exc}", code=Code.INTERNAL_ERROR, status_code=502)
        return ok(results=[result.as_wire() for result in results])


class DocumentAdminViewSet(AdminApiViewSet):
    """`/knowledge-base/{id}/documents` (JSON or multipart upload, list) and `/documents/{documentId}`."""

    parser_classes = [JSONParser, MultiPartParser]

    @extend_schema(
        operation_id="knowledge_base_documents",
        parameters=[_ID],
        responses=envelope("KnowledgeBaseDocumentsResponse", documents=DocumentSerializer(many=True)),
    )
    def list(self, request: Request, knowledgeBaseId: str) -> Response:
        return ok(documents=DocumentSerializer(selectors.documents_of(knowledge_base_id=knowledgeBaseId), many=True).data)

    @extend_schema(
        operation_id="knowledge_base_document_add",
        parameters=[_ID],
        request={
            "application/json": DocumentUploadRequestSerializer,
            # The part's type decides how the file is read (ingest.mime_type_of).
            "multipart/form-data": OpenApiRequest(
                DocumentFormSerializer, encoding={"file": {"contentType": ", ".join(ingest.ACCEPTED_TYPES)}}
            ),
        },
        responses=_DocumentResponse,
        description=f"Accepted types: {', '.join(ingest.ACCEPTED_TYPES)}. A document with the sourceUrl (or title) of an "
        "earlier one replaces it once indexed. Over CHAT_KB_MAX_DOCUMENT_BYTES: 413.",
    )
    def upload(self, request: Request, knowledgeBaseId: str) -> Response:
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > settings.CHAT_KB_MAX_DOCUMENT_BYTES + _MULTIPART_SLACK:
            raise ApiError(
                f"body: is {declared} bytes; the largest document accepted is {settings.CHAT_KB_MAX_DOCUMENT_BYTES} bytes",
                code=Code.PAYLOAD_TOO_LARGE,
                status_code=413,
            )
        if request.content_type.startswith("multipart/"):
            form = checked(DocumentFormSerializer, request.data)
            upload = form["file"]
            fields = {
                "title": form.get("title") or upload.name or "",
                "data": upload.read(),
                "mime_type": ingest.mime_type_of(upload.content_type, upload.name),
                "source_url": form.get("sourceUrl"),
            }
            user_id = form.get("userId")
        else:
            body = checked(DocumentUploadRequestSerializer, request.data)
            document = body["document"]
            fields = {
                "title": document["title"],
                "data": document["text"].encode(),
                "mime_type": document.get("mimeType", "text/plain"),
                "source_url": document.get("sourceUrl"),
            }
            user_id = body.get("userId")
        document = services.document_add(knowledge_base_id=knowledgeBaseId, user_id=_stamp(request, user_id), **fields)
        return ok(document=DocumentSerializer(document).data)

    @extend_schema(
        operation_id="knowledge_base_document_delete",
        parameters=[_ID, OpenApiParameter("documentId", str, OpenApiParameter.PATH)],
        responses=_Success,
    )
    def destroy(self, request: Request, knowledgeBaseId: str, documentId: str) -> Response:
        services.document_delete(knowledge_base_id=knowledgeBaseId, document_id=documentId, user_id=caller_id(request))
        return ok()
