"""Admin API of agents (docs/api.md, "Agents"). Views parse, call a service or selector, render."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
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
from chatplatform.api.permissions import caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, checked, ok

_USER_ID = StrictCharField(required=False, allow_blank=True)  # as the request serializer's userId

_AGENT_ID = OpenApiParameter("agentId", str, OpenApiParameter.PATH)
_AgentResponse = envelope("AgentResponse", agent=AgentSerializer())
_SuccessResponse = envelope("AgentDeleteResponse")


def _stamp(request: Request, user_id: str | None) -> str:
    """Audit stamps come from the request's userId, else the caller (docs/api.md, "Who may read what")."""
    return user_id or caller_id(request)


class AgentAdminViewSet(AdminApiViewSet):
    """`/api/chat-admin/agent`, `/agent/{agentId}`, `/agents/search`, plus version history and rollback."""

    @extend_schema(
        operation_id="agent_upsert",
        # Documented with the agent's fields; the service validates them (with the stored agent at hand).
        request=inline_serializer("AgentUpsertRequest", {"agent": AgentWriteSerializer(), "userId": _USER_ID}),
        responses=_AgentResponse,
    )
    def upsert(self, request: Request) -> Response:
        body = checked(AgentUpsertRequestSerializer, request.data)
        agent = services.agent_upsert(data=body["agent"], user_id=_stamp(request, body.get("userId")))
        return ok(agent=AgentSerializer(agent).data)

    @extend_schema(operation_id="agent_get", parameters=[_AGENT_ID], responses=_AgentResponse)
    def retrieve(self, request: Request, agentId: str) -> Response:
        return ok(agent=AgentSerializer(selectors.agent_get(agent_id=agentId)).data)

    @extend_schema(operation_id="agent_delete", parameters=[_AGENT_ID], responses=_SuccessResponse)
    def destroy(self, request: Request, agentId: str) -> Response:
        services.agent_delete(agent_id=agentId, user_id=caller_id(request))
        return ok()

    @extend_schema(
        operation_id="agents_search",
        request=AgentSearchRequestSerializer,
        responses=envelope("AgentSearchResponse", agents=AgentSerializer(many=True)),
    )
    def search(self, request: Request) -> Response:
        body = checked(AgentSearchRequestSerializer, request.data)
        agents = selectors.agents_search(agent_ids=body.get("agentIds"))
        return ok(agents=AgentSerializer(agents, many=True).data)

    @extend_schema(
        operation_id="agent_versions",
        parameters=[_AGENT_ID],
        responses=envelope("AgentVersionsResponse", versions=AgentVersionSerializer(many=True)),
    )
    def versions(self, request: Request, agentId: str) -> Response:
        return ok(versions=AgentVersionSerializer(selectors.agent_versions(agent_id=agentId), many=True).data)

    @extend_schema(
        operation_id="agent_version_get",
        parameters=[_AGENT_ID, OpenApiParameter("version", int, OpenApiParameter.PATH)],
        responses=envelope("AgentVersionResponse", version=AgentVersionDetailSerializer()),
    )
    def version(self, request: Request, agentId: str, version: int) -> Response:
        return ok(version=AgentVersionDetailSerializer(selectors.agent_version(agent_id=agentId, version=version)).data)

    @extend_schema(operation_id="agent_rollback", parameters=[_AGENT_ID], request=AgentRollbackRequestSerializer, responses=_AgentResponse)
    def rollback(self, request: Request, agentId: str) -> Response:
        body = checked(AgentRollbackRequestSerializer, request.data)
        agent = services.agent_rollback(agent_id=agentId, version=body["version"], user_id=_stamp(request, body.get("userId")))
        return ok(agent=AgentSerializer(agent).data)
