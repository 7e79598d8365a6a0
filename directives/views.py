"""Admin API of semantic directives (docs/api.md, "Semantic directives").

Views parse, call a service or selector, render.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chatplatform.api.errors import InvalidRequest
from chatplatform.api.pagination import decode_token, encode_token
from chatplatform.api.permissions import caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, checked, ok
from chatplatform.iac import check_stage, decode_batch
from directives import selectors, services
from directives.serializers import (
    SEARCH_DEFAULT_LIMIT,
    DirectiveBodySerializer,
    DirectiveDeployRequestSerializer,
    DirectiveSearchRequestSerializer,
    SemanticDirectiveDeleteSerializer,
    SemanticDirectiveSerializer,
    SemanticDirectiveUpsertSerializer,
    iso,
)

_TOKEN_KIND = "directives.search"


def _stamp(request: Request, user_id: str | None) -> str:
    """Audit stamps come from the request's userId, else the caller (docs/api.md, "Who may read what")."""
    return user_id or caller_id(request)


def _position(token: Any, *, descending: bool) -> selectors.Position | None:
    position = decode_token(token, kind=_TOKEN_KIND)
    if position is None:
        return None
    try:
        order, created, pk = position["o"], datetime.fromisoformat(position["c"].replace("Z", "+00:00")), int(position["k"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InvalidRequest("is not a valid token from a previous response", field="paginationToken") from None
    if order != ("desc" if descending else "asc"):
        raise InvalidRequest("belongs to a search with another sortOrder", field="paginationToken")
    return created, pk


def _token(position: selectors.Position | None, *, descending: bool) -> str | None:
    if position is None:
        return None
    created, pk = position
    return encode_token({"o": "desc" if descending else "asc", "c": iso(created), "k": pk}, kind=_TOKEN_KIND)


class SemanticDirectiveAdminViewSet(AdminApiViewSet):
    """`/api/chat-admin/semantic-directive`, `/semantic-directive/search`, `/semantic-directive/deploy`."""

    admin_denied_message = "insufficient permissions: admin privileges are required to manage semantic directives"

    @extend_schema(
        operation_id="semantic_directive_upsert",
        request=SemanticDirectiveUpsertSerializer,
        responses=envelope("SemanticDirectiveResponse", semanticDirective=SemanticDirectiveSerializer()),
        description="Create or update by (scope, id). The service builds `scope` from scopeType + scopeValue (or parses a "
        "given scope), sets createDate once and refreshes lastUpdate; client stamps and groupId are ignored.",
    )
    def upsert(self, request: Request) -> Response:
        body = checked(DirectiveBodySerializer, request.data)
        directive = services.directive_upsert(data=body["semanticDirective"], user_id=_stamp(request, body.get("userId")))
        return ok(semanticDirective=SemanticDirectiveSerializer(directive).data)

    @extend_schema(
        operation_id="semantic_directive_delete",
        request=SemanticDirectiveDeleteSerializer,
        responses=envelope("SemanticDirectiveDeleteResponse"),
        description="Delete the directive named by {scope, id} (or scopeType + scopeValue + id); 404 NOT_FOUND when absent.",
    )
    def destroy(self, request: Request) -> Response:
        body = checked(DirectiveBodySerializer, request.data)
        services.directive_delete(data=body["semanticDirective"], user_id=caller_id(request))
        return ok()

    @extend_schema(
        operation_id="semantic_directives_search",
        request=DirectiveSearchRequestSerializer,
        responses=envelope(
            "SemanticDirectiveSearchResponse",
            semanticDirectives=SemanticDirectiveSerializer(many=True),
            paginationToken=serializers.CharField(required=False, help_text="Present only when a next page exists."),
        ),
        description="Precedence: scopes, else createdBy, else directiveIds, else all; date filters apply in every case. "
        "Ordered by createDate (sortOrder, default desc); pages of `limit` (default 100, at most 1000).",
    )
    def search(self, request: Request) -> Response:
        body = checked(DirectiveSearchRequestSerializer, request.data)
        data = body
        search = selectors.DirectiveSearch(
            scopes=data.get("scopes"),
            created_by=data.get("createdBy") or None,
            directive_ids=data.get("directiveIds"),
            created_after=data.get("createdAfter"),
            created_before=data.get("createdBefore"),
            updated_after=data.get("updatedAfter"),
            updated_before=data.get("updatedBefore"),
            descending=data.get("sortOrder") != "asc",
            include_instructions=bool(data.get("includeInstructions")),
        )
        after = _position(data.get("paginationToken"), descending=search.descending)
        page, following = selectors.directives_search(search=search, limit=data.get("limit") or SEARCH_DEFAULT_LIMIT, after=after)
        context = {"include_instructions": search.include_instructions}
        fields: dict[str, Any] = {"semanticDirectives": SemanticDirectiveSerializer(page, many=True, context=context).data}
        token = _token(following, descending=search.descending)
        if token is not None:
            fields["paginationToken"] = token
        return ok(**fields)

    @extend_schema(
        operation_id="semantic_directives_deploy",
        request=DirectiveDeployRequestSerializer,
        responses=envelope(
            "SemanticDirectiveDeployResponse",
            applied=serializers.IntegerField(help_text="Directives of the batch now stored (created, updated or unchanged)."),
            deleted=serializers.IntegerField(help_text="Directives of the group missing from the batch, deleted."),
        ),
        description="Infrastructure-as-code batch, applied atomically: every directive gets groupId; "
        "directives of that groupId missing from the batch are deleted.",
    )
    def deploy(self, request: Request) -> Response:
        body = checked(DirectiveDeployRequestSerializer, request.data)
        check_stage(body["stage"])
        payload = decode_batch(body["data"])
        batch_user = payload.get("userId")
        if batch_user is not None and not isinstance(batch_user, str):
            raise InvalidRequest("must be a string", field="data.userId")
        result = services.directives_deploy(
            group_id=body["groupId"],
            directives=payload.get("semanticDirectives"),
            user_id=_stamp(request, batch_user),
            stage=body["stage"],
            timestamp=body.get("timestamp") or "",
        )
        return ok(applied=result.applied, deleted=len(result.deleted))
