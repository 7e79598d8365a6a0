"""The widget runtime's server side (docs/api.md, "Widgets"): widget data, and web components from the store."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chat.users.serializers import (
    UserIdQuerySerializer,
)
from chat.widgets import services as widgets
from chat.widgets.serializers import WidgetDataWriteSerializer
from chatplatform.api.permissions import acting_user_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import ApiViewSet, checked, ok

# --- The widget runtime's server side (docs/api.md, "Widgets") --------------------------------------

# widgets.check_tag_reference's rule.
_NAME = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,100}$"}
_SCOPE = OpenApiParameter("scope", _NAME, OpenApiParameter.PATH)
_TAG = OpenApiParameter("tag", _NAME, OpenApiParameter.PATH)
_WidgetDataResponse = envelope("WidgetDataResponse", data=serializers.JSONField(allow_null=True, help_text="null when nothing is stored"))


class WidgetDataViewSet(ApiViewSet):
    """`GET`/`POST`/`DELETE /api/chat/widget-data/{scope}/{tag}`: a widget's object per user and tag."""

    @extend_schema(operation_id="chat_widget_data_get", parameters=[_SCOPE, _TAG, UserIdQuerySerializer], responses=_WidgetDataResponse)
    def retrieve(self, request: Request, scope: str, tag: str) -> Response:
        widgets.check_tag_reference(scope, tag)
        user_id = acting_user_id(request, request.query_params.get("userId"))
        return ok(data=widgets.widget_data_get(user_id=user_id, scope=scope, tag=tag))

    @extend_schema(
        operation_id="chat_widget_data_set", parameters=[_SCOPE, _TAG], request=WidgetDataWriteSerializer, responses=_WidgetDataResponse
    )
    def upsert(self, request: Request, scope: str, tag: str) -> Response:
        widgets.check_tag_reference(scope, tag)
        body = checked(WidgetDataWriteSerializer, request.data)
        user_id = acting_user_id(request, body.get("userId"))
        data = widgets.widget_data_set(user_id=user_id, scope=scope, tag=tag, data=body["data"], partial=body["partial"])
        return ok(data=data)

    @extend_schema(
        operation_id="chat_widget_data_delete",
        parameters=[_SCOPE, _TAG, UserIdQuerySerializer],
        request=None,
        responses=envelope("WidgetDataDeleteResponse"),
    )
    def destroy(self, request: Request, scope: str, tag: str) -> Response:
        widgets.check_tag_reference(scope, tag)
        user_id = acting_user_id(request, request.query_params.get("userId"))
        widgets.widget_data_delete(user_id=user_id, scope=scope, tag=tag)
        return ok()


class WebComponentViewSet(ApiViewSet):
    """`GET /api/chat/webcomponent/{scope}/{tag}`: the script of a store-located web component."""

    @extend_schema(
        operation_id="chat_webcomponent_script",
        parameters=[_SCOPE, _TAG],
        responses={(200, "text/javascript"): OpenApiTypes.STR, (304, "text/javascript"): None},
        description=(
            "The script of a `web-component` tag whose location is the store (`storeBucket`/`storeKey`), decoded per its "
            "`encoding`. `ETag` and `If-None-Match` (304); 404 for an unknown tag, one without a store location, or an "
            "absent object; 502 when the stored bytes do not decode."
        ),
    )
    def script(self, request: Request, scope: str, tag: str) -> HttpResponse:
        widgets.check_tag_reference(scope, tag)
        script = widgets.web_component_script(scope=scope, tag=tag)
        # A short lifetime, then a revalidation by ETag: an operator's new script shows within a minute.
        headers = {"ETag": script.etag, "Cache-Control": "private, max-age=60"}
        if script.etag in (value.strip() for value in request.headers.get("If-None-Match", "").split(",")):
            return HttpResponse(status=304, headers=headers)
        return HttpResponse(script.source, content_type="text/javascript; charset=utf-8", headers=headers)
