"""`/api/chat/files`: upload, read and download a file, by its owner only (docs/api.md, "Files attached to messages")."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from chat.files.content import INLINE_MIME_TYPES
from chat.files.selectors import file_content, file_get
from chat.files.serializers import ChatMessageFileSerializer, FileUploadSerializer
from chat.files.services import file_store
from chat.users.authentication import signed_in
from chatplatform.api.errors import ApiError
from chatplatform.api.fields import whole_number
from chatplatform.api.schema import envelope
from chatplatform.api.views import ApiViewSet, checked, ok

_FILE_ID = OpenApiParameter("fileId", str, OpenApiParameter.PATH)
_FileResponse = envelope("FileResponse", file=ChatMessageFileSerializer())
# Multipart framing around a file: a body larger than the limit plus this is refused unread.
_MULTIPART_SLACK = 64 * 1024


class FileViewSet(ApiViewSet):
    """`POST /api/chat/files` (upload), `GET /api/chat/files/{fileId}` and `.../content` (the owner only)."""

    parser_classes = [MultiPartParser]

    @extend_schema(operation_id="chat_file_upload", request={"multipart/form-data": FileUploadSerializer}, responses=_FileResponse)
    def upload(self, request: Request) -> Response:
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if (whole_number(declared, max_digits=4000) or 0) > settings.CHAT_UPLOAD_MAX_BYTES + _MULTIPART_SLACK:
            raise ApiError(f"file: must be at most {settings.CHAT_UPLOAD_MAX_BYTES} bytes", status_code=413)
        body = checked(FileUploadSerializer, request.data)
        stored = file_store(user=signed_in(request), chat_app_id=body["chatAppId"], upload=body["file"])
        return ok(file=ChatMessageFileSerializer(stored).data)

    @extend_schema(operation_id="chat_file_get", parameters=[_FILE_ID], responses=_FileResponse)
    def retrieve(self, request: Request, fileId: str) -> Response:
        return ok(file=ChatMessageFileSerializer(file_get(file_id=fileId, user=signed_in(request))).data)

    @extend_schema(
        operation_id="chat_file_content",
        parameters=[_FILE_ID],
        responses={(200, "*/*"): OpenApiTypes.BINARY},
        description="The file's bytes, for its owner only, with its type as uploaded. Raster images are sent inline, anything else "
        "as an attachment.",
    )
    def content(self, request: Request, fileId: str) -> HttpResponse:
        file = file_get(file_id=fileId, user=signed_in(request))
        response = HttpResponse(file_content(file), content_type=file.mime_type)
        disposition = "inline" if file.mime_type in INLINE_MIME_TYPES else "attachment"
        # A stored file has a name: the header is never None.
        response["Content-Disposition"] = content_disposition_header(disposition == "attachment", file.name)  # type: ignore[assignment]
        # Whatever the bytes are, they never run as a page of this origin.
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, max-age=3600"
        return response
