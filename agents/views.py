"""Admin API of agents (SPEC.md "Agents"). Views parse, call a service or selector, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from agents import selectors, services
from agents.serializers import (
    AgentRollbackRequestSerializer,
    AgentSearchRequestSerializer,
    AgentSerializer,
    AgentUpsertRequestSerializer,
    AgentVersionDetailSerializer,
    AgentVersionSerializer,
    AgentWriteSerializer,
)
from chatplatform.api.fields import StrictCharField
from chatplatform.api.views import AdminApiViewSet, ok

_USER_ID = StrictCharField(required=False, allow_blank=True)  # as the request serializer's userId

_AGENT_ID = OpenApiParameter("agentId", str, OpenApiParameter.PATH)
_AgentResponse = inline_serializer("AgentResponse", {"success": serializers.BooleanField(), "agent": AgentSerializer()})
_SuccessResponse = inline_serializer("AgentDeleteResponse", {"success": serializers.BooleanField()})


def _stamp(request: Request, user_id: str | None) -> str:
    """Audit stamps come from the request's userId, else the caller (CONTRACT §5)."""
    return user_id or request.user.pk


class AgentAdminViewSet(AdminApiViewSet):
    """`/api/chat-admin/agent`, `/agent/{agentId}`, `/agents/search`, plus version history and rollback."""

    @extend_schema(
        operation_id="agent_upsert",
        # Documented with the agent's fields; the service validates them (with the stored agent at hand).
        request=inline_serializer("AgentUpsertRequest", {"agent": AgentWriteSerializer(), "userId": _USER_ID}),
        responses=_AgentResponse,
    )
    def upsert(self, request: Request) -> Response:
        body = AgentUpsertRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        agent = services.agent_upsert(data=body.validated_data["agent"], user_id=_stamp(request, body.validated_data.get("userId")))
        return ok(agent=AgentSerializer(agent).data)

    @extend_schema(operation_id="agent_get", parameters=[_AGENT_ID], responses=_AgentResponse)
    def retrieve(self, request: Request, agentId: str) -> Response:
        return ok(agent=AgentSerializer(selectors.agent_get(agent_id=agentId)).data)

    @extend_schema(operation_id="agent_delete", parameters=[_AGENT_ID], responses=_SuccessResponse)
    def destroy(self, request: Request, agentId: str) -> Response:
        services.agent_delete(agent_id=agentId, user_id=request.user.pk)
        return ok()

    @extend_schema(
        operation_id="agents_search",
        request=AgentSearchRequestSerializer,
        responses=inline_serializer("AgentSearchResponse", {"success": serializers.BooleanField(), "agents": AgentSerializer(many=True)}),
    )
    def search(self, request: Request) -> Response:
        body = AgentSearchRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        agents = selectors.agents_search(agent_ids=body.validated_data.get("agentIds"))
        return ok(agents=AgentSerializer(agents, many=True).data)

    @extend_schema(
        operation_id="agent_versions",
        parameters=[_AGENT_ID],
        responses=inline_serializer(
            "AgentVersionsResponse", {"success": serializers.BooleanField(), "versions": AgentVersionSerializer(many=True)}
        ),
    )
    def versions(self, request: Request, agentId: str) -> Response:
        return ok(versions=AgentVersionSerializer(selectors.agent_versions(agent_id=agentId), many=True).data)

    @extend_schema(
        operation_id="agent_version_get",
        parameters=[_AGENT_ID, OpenApiParameter("version", int, OpenApiParameter.PATH)],
        responses=inline_serializer(
            "AgentVersionResponse", {"success": serializers.BooleanField(), "version": AgentVersionDetailSerializer()}
        ),
    )
    def version(self, request: Request, agentId: str, version: int) -> Response:
        return ok(version=AgentVersionDetailSerializer(selectors.agent_version(agent_id=agentId, version=version)).data)

    @extend_schema(operation_id="agent_rollback", parameters=[_AGENT_ID], request=AgentRollbackRequestSerializer, responses=_AgentResponse)
    def rollback(self, request: Request, agentId: str) -> Response:
        body = AgentRollbackRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        agent = services.agent_rollback(
            agent_id=agentId, version=body.validated_data["version"], user_id=_stamp(request, body.validated_data.get("userId"))
        )
        return ok(agent=AgentSerializer(agent).data)
