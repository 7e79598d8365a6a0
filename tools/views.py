"""Admin API of tool definitions (docs/api.md, "Tools"). Views parse, call a
service or selector, and render; every rule lives in tools.validation."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chatplatform.api.errors import NotFound
from chatplatform.api.fields import StrictCharField
from chatplatform.api.permissions import caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, checked, ok
from tools import selectors, services
from tools.serializers import ToolSerializer, ToolWriteSerializer

_USER_ID = StrictCharField(required=False, allow_blank=True)  # as the request serializer's userId

MAX_SEARCH_IDS = 1000


class ToolUpsertSerializer(serializers.Serializer):
    tool = serializers.JSONField(help_text="A whole ToolDefinition to create, or toolId plus the fields to change.")
    userId = StrictCharField(required=False, allow_blank=True, help_text="Recorded as createdBy / lastModifiedBy.")


class ToolSearchSerializer(serializers.Serializer):
    toolIds = serializers.ListField(
        child=StrictCharField(max_length=200),
        required=False,
        allow_null=True,
        max_length=MAX_SEARCH_IDS,
        help_text="All tools when absent.",
    )
    userId = StrictCharField(required=False, allow_blank=True)


_ToolResponse = envelope("ToolResponse", tool=ToolSerializer())


class ToolAdminViewSet(AdminApiViewSet):
    """`POST /api/chat-admin/tool`, `GET`/`DELETE /api/chat-admin/tool/{toolId}`, `POST /api/chat-admin/tools/search`."""

    @extend_schema(
        operation_id="tool_upsert",
        request=inline_serializer("ToolUpsert", {"tool": ToolWriteSerializer(), "userId": _USER_ID}),
        responses=_ToolResponse,
        description="Create the tool when toolId is new, else update it with the fields given (merged onto the stored "
        "definition, then validated as a whole). auth.clientSecret is never returned; sending the placeholder back keeps it.",
    )
    def upsert(self, request: Request) -> Response:
        body = checked(ToolUpsertSerializer, request.data)
        user_id = body.get("userId") or caller_id(request)
        tool = services.tool_upsert(tool=body["tool"], user_id=user_id)
        return ok(tool=ToolSerializer(tool).data)

    @extend_schema(operation_id="tool_retrieve", responses=_ToolResponse)
    def retrieve(self, request: Request, tool_id: str) -> Response:
        tool = selectors.tool_get(tool_id=tool_id)
        if tool is None:
            raise NotFound(f"tool {tool_id} not found")
        return ok(tool=ToolSerializer(tool).data)

    @extend_schema(
        operation_id="tool_destroy",
        request=None,
        responses=envelope("ToolDeleteResponse"),
    )
    def destroy(self, request: Request, tool_id: str) -> Response:
        if not services.tool_delete(tool_id=tool_id, user_id=caller_id(request)):
            raise NotFound(f"tool {tool_id} not found")
        return ok()

    @extend_schema(
        operation_id="tools_search",
        request=ToolSearchSerializer,
        responses=envelope("ToolSearchResponse", tools=ToolSerializer(many=True)),
    )
    def search(self, request: Request) -> Response:
        body = checked(ToolSearchSerializer, request.data)
        tools = selectors.tools_search(tool_ids=body.get("toolIds"))
        return ok(tools=ToolSerializer(tools, many=True).data)
