"""Base classes every API view uses, so that each response under /api/ gets the same treatment:
the admission (chatplatform.api.admission: authentication and the rate limit, so 401s are counted
and carry the headers too), then permissions; the envelope on the way out.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from chatplatform.api.admission import Admission, admit
from chatplatform.api.errors import NotFound
from chatplatform.api.permissions import IsChatAdmin


def checked(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """What a request body or query holds once `serializer_class` accepts it; 400 naming the field and the rule otherwise."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def ok(**fields: Any) -> Response:
    """A success envelope: `{success: true, <endpoint fields>}`."""
    return Response({"success": True, **fields})


def encode_ok(**fields: Any) -> bytes:
    """The success envelope encoded as the API encodes it, for answers kept in a cache."""
    return JSONRenderer().render({"success": True, **fields})


def ok_encoded(body: bytes) -> HttpResponse:
    """An answer from `encode_ok`, sent as is (no decoding and re-encoding on a cache hit)."""
    return HttpResponse(body, content_type="application/json")


def client_address(request: HttpRequest | Request) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"


class ApiView(APIView):
    """Base of every /api/ view. `rate_scope` names the budget (docs/api.md, "Rate limits"); by default it
    follows the path: /api/chat-admin/ → "admin", everything else → "chat"."""

    rate_scope: str | None = None

    def get_rate_scope(self, request: Request) -> str:
        if self.rate_scope:
            return self.rate_scope
        return "admin" if request.path.startswith("/api/chat-admin/") else "chat"

    admission: Admission | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        self.format_kwarg = self.get_format_suffix(**kwargs)
        neg = self.perform_content_negotiation(request)
        request.accepted_renderer, request.accepted_media_type = neg
        version, scheme = self.determine_version(request, *args, **kwargs)
        request.version, request.versioning_scheme = version, scheme
        self.admission = admit(lambda: request.user, address=client_address(request), scope=self.get_rate_scope(request))
        if self.admission.refusal is not None:
            raise self.admission.refusal
        self.check_permissions(request)

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        if self.admission is not None:
            for name, value in self.admission.budget.headers().items():
                response[name] = value
        return response


class ApiViewSet(viewsets.ViewSetMixin, ApiView):
    """A ViewSet on the ApiView base; actions are mapped to the API's literal paths in urls.py."""


class AdminApiViewSet(ApiViewSet):
    """Admin API: admin privileges required (docs/api.md, "Who may read what")."""

    permission_classes = [IsChatAdmin]


@extend_schema(exclude=True)
class UnknownPathView(ApiView):
    """Any /api/ path that matches no endpoint: 404 in the envelope (docs/api.md, "Envelope")."""

    permission_classes = [AllowAny]

    def _not_found(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise NotFound(f"no endpoint at {request.path}")

    get = post = put = patch = delete = head = options = _not_found  # type: ignore[assignment]  # DRF hands it its Request
