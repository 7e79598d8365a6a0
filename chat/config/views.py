"""Admin API of configuration as code (docs/api.md, "Configuration as code")."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from chat.config.selectors import config_export
from chat.config.serializers import ChangeSerializer, ConfigApplyRequestSerializer, ConfigSerializer
from chat.config.services import config_apply
from chatplatform.api.permissions import caller_id
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, checked, ok


class ConfigAdminViewSet(AdminApiViewSet):
    """`GET /api/chat-admin/config`, `POST /api/chat-admin/config/apply`."""

    @extend_schema(operation_id="config_export", responses=envelope("ConfigExportResponse", config=ConfigSerializer()))
    def export(self, request: Request) -> Response:
        return ok(config=config_export())

    @extend_schema(
        operation_id="config_apply",
        request=ConfigApplyRequestSerializer,
        responses=envelope("ConfigApplyResponse", changes=ChangeSerializer(many=True)),
        description="Create or update every definition of config in dependency order, in one transaction; a definition that "
        "breaks a rule is a 400 naming kind, id and field, and nothing is written. A definition equal to the stored one is "
        '"unchanged" (no version, no audit entry). "********" as a secret keeps the stored one.',
    )
    def apply(self, request: Request) -> Response:
        body = checked(ConfigApplyRequestSerializer, request.data)
        changes = config_apply(
            config=body["config"], user_id=body.get("userId") or caller_id(request), dry_run=body["dryRun"], prune=body["prune"]
        )
        return ok(changes=[asdict(change) for change in changes])
