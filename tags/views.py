"""Admin API and Chat API of tag definitions (docs/api.md, "Tag definitions",
"Rate limits"). The views parse, call a service or selector, and render."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chatplatform.api.permissions import acting_user_id, caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, ApiViewSet, checked, ok, ok_encoded
from chatplatform.iac import check_stage, decode_batch
from tags import selectors, services
from tags.serializers import (
    TagDefinitionDeleteRequestSerializer,
    TagDefinitionDeployRequestSerializer,
    TagDefinitionSearchRequestSerializer,
    TagDefinitionSerializer,
    TagDefinitionUpsertRequestSerializer,
    render,
    render_many,
    validate_batch,
)

_SEARCH_RESPONSE = envelope(
    "TagDefinitionSearchResponse",
    tagDefinitions=TagDefinitionSerializer(many=True),
    paginationToken=serializers.CharField(required=False, help_text="Present when there is a next page."),
)


class TagDefinitionAdminViewSet(AdminApiViewSet):
    """`/api/chat-admin/tagdef` and its search, cache clearing and IaC batch."""

    rate_scope = "tagdef-admin"  # docs/api.md, "Rate limits": 100 per minute, more specific than the Admin API's
    admin_denied_message = "insufficient permissions to manage tag definitions: admin privileges are required"

    @extend_schema(
        request=TagDefinitionUpsertRequestSerializer,
        responses=envelope("TagDefinitionUpsertResponse", tagDefinition=TagDefinitionSerializer()),
        summary="Create or update a tag definition (keyed by scope and tag)",
        description="Creates the definition when (scope, tag) is absent, else replaces it. The service sets createDate and "
        "createdBy once and refreshes lastUpdate and lastUpdatedBy (from userId, else the caller). The older form "
        "(llmInstructions + boolean enabled) is accepted and completed. Rendering contexts are returned in the object form.",
    )
    def upsert(self, request: Request) -> Response:
        body = checked(TagDefinitionUpsertRequestSerializer, request.data)
        user_id = acting_user_id(request, body.get("userId"))
        definition = services.tag_upsert(definition=body["tagDefinition"], user_id=user_id)
        return ok(tagDefinition=render(definition))

    @extend_schema(
        request=TagDefinitionDeleteRequestSerializer,
        responses={200: envelope("TagDefinitionDeleteResponse")},
        summary="Delete a tag definition for good",
        description="Permanent. 404 NOT_FOUND naming scope and tag when the definition does not exist.",
    )
    def destroy(self, request: Request) -> Response:
        body = checked(TagDefinitionDeleteRequestSerializer, request.data)
        target = body["tagDefinition"]
        services.tag_delete(scope=target["scope"], tag=target["tag"], user_id=caller_id(request))
        return ok()

    @extend_schema(
        request=TagDefinitionSearchRequestSerializer,
        responses=_SEARCH_RESPONSE,
        summary="Search tag definitions in every status",
        description="Pages of 100 by (scope, tag); paginationToken is present when there is a next page. "
        "Instructions only with includeInstructions: true.",
    )
    def search(self, request: Request) -> Response:
        body = checked(TagDefinitionSearchRequestSerializer, request.data)
        page = selectors.tags_admin_search(pagination_token=body.get("paginationToken"))
        definitions = render_many(page.definitions, include_instructions=body["includeInstructions"])
        return ok(**selectors.page_fields(definitions, page.pagination_token))

    @extend_schema(
        request=None,
        responses=envelope("TagCacheClearResponse", cleared=serializers.BooleanField()),
        summary="Clear the tag definition cache",
        description="Every cached tag entry becomes stale at once, in every server process.",
    )
    def clear_cache(self, request: Request) -> Response:
        services.tag_cache_clear()
        return ok(cleared=True)

    @extend_schema(
        request=TagDefinitionDeployRequestSerializer,
        responses=envelope("TagDefinitionDeployResponse", applied=serializers.IntegerField(), deleted=serializers.IntegerField()),
        summary="Apply an infrastructure-as-code batch of tag definitions",
        description="data is base64 of gzip of {userId, tagDefinitions}. stage must equal CHAT_STAGE. Every member joins "
        "groupId; members of the group missing from the batch are deleted; all or nothing. {{stage}} in a web component "
        "url becomes the stage.",
    )
    def deploy(self, request: Request) -> Response:
        body = checked(TagDefinitionDeployRequestSerializer, request.data)
        check_stage(body["stage"])
        batch_user_id, definitions = validate_batch(decode_batch(body["data"]))
        result = services.tags_deploy(
            definitions=definitions,
            group_id=body["groupId"],
            user_id=acting_user_id(request, batch_user_id),
            timestamp=body.get("timestamp"),
        )
        return ok(applied=result.applied, deleted=result.deleted)


class TagDefinitionChatViewSet(ApiViewSet):
    """`POST /api/chat/tagdef/search`: any authenticated user; enabled definitions only."""

    rate_scope = "tagdef-chat"  # docs/api.md, "Rate limits": 1000 per minute, more specific than the Chat API's

    @extend_schema(
        request=TagDefinitionSearchRequestSerializer,
        responses=_SEARCH_RESPONSE,
        summary="Search enabled tag definitions",
        description="Only status enabled, served from the tag cache. Pages of 100 by (scope, tag). "
        "llmInstructionsMd and llmInstructions only with includeInstructions: true.",
    )
    def search(self, request: Request) -> HttpResponse:
        body = checked(TagDefinitionSearchRequestSerializer, request.data)
        return ok_encoded(
            selectors.tags_enabled_search(
                pagination_token=body.get("paginationToken"),
                include_instructions=body["includeInstructions"],
            )
        )
