"""A session's running turn from any process (docs/api.md, "Resume, stop and approvals"):
`GET /api/chat/sessions/{sessionId}/stream` follows it (from `Last-Event-ID`), `POST
/api/chat/sessions/{sessionId}/stop` ends it; its tool calls that wait for a person are listed at
`GET /api/chat/sessions/{sessionId}/approvals` and decided at `POST …/approvals/{approvalId}`."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import api_view

from chat import turn
from chat.approvals.selectors import session_approvals
from chat.approvals.serializers import DecisionSerializer, ToolApprovalSerializer
from chat.approvals.services import approval_decide
from chat.doors.http import DoorView, caller_of, wants_events
from chat.sessions.selectors import session_get
from chatplatform.api import bodies
from chatplatform.api.errors import Code, NotFound
from chatplatform.api.permissions import acting_for, is_admin
from chatplatform.api.ratelimit import Budget
from chatplatform.api.schema import envelope
from chatplatform.api.views import checked
from chatplatform.db import on_db_thread


@on_db_thread
def own_session(user: Any, session_id: str, user_id: Any) -> uuid.UUID:
    """The session's id when it is the acting user's; 404 INVALID_SESSION_ID otherwise."""
    return session_get(session_id=session_id, user_id=acting_for(user, user_id)).pk


class SessionStreamView(DoorView):
    """`GET /api/chat/sessions/{sessionId}/stream`: the events of the session's latest turn after
    `Last-Event-ID` (or `?lastEventId=`), then the turn live until its end; 204 when none is
    running or kept."""

    async def get(self, request: HttpRequest, sessionId: str) -> HttpResponse | StreamingHttpResponse:
        budget: Budget | None = None
        try:
            admission = await turn.admit_action(caller_of(request))
            budget = admission.budget
            session_id = await own_session(admission.user, sessionId, request.GET.get("userId"))
            last = request.headers.get("Last-Event-ID") or request.GET.get("lastEventId")
            events = await turn.resume(session_id, last)
        except turn.Refused as refused:
            return self.refuse(refused.error, refused.budget)
        except Exception as exc:
            return self.refuse(exc, budget)
        if events is None:
            return self.headed(HttpResponse(status=204), budget)
        return self.stream(events, budget)


class SessionStopView(DoorView):
    """`POST /api/chat/sessions/{sessionId}/stop` `{userId?}` → `{success, stopped}`."""

    async def post(self, request: HttpRequest, sessionId: str) -> HttpResponse:
        budget: Budget | None = None
        try:
            raw = self.body(request)
            body = bodies.load_json(raw) if raw else {}
            if not isinstance(body, dict):
                raise serializers.ValidationError({"body": ["must be a JSON object"]})
            admission = await turn.admit_action(caller_of(request))
            budget = admission.budget
            session_id = await own_session(admission.user, sessionId, body.get("userId"))
            stopped = await turn.stop(session_id)
        except turn.Refused as refused:
            return self.refuse(refused.error, refused.budget)
        except Exception as exc:
            return self.refuse(exc, budget)
        return self.answer({"success": True, "stopped": stopped}, budget)


class ApprovalsView(DoorView):
    """`GET /api/chat/sessions/{sessionId}/approvals` → `{success, approvals}`, pending first."""

    async def get(self, request: HttpRequest, sessionId: str) -> HttpResponse:
        budget: Budget | None = None
        try:
            admission = await turn.admit_action(caller_of(request))
            budget = admission.budget
            approvals = await _visible_approvals(admission.user, sessionId, request.GET.get("userId"))
        except turn.Refused as refused:
            return self.refuse(refused.error, refused.budget)
        except Exception as exc:
            return self.refuse(exc, budget)
        return self.answer({"success": True, "approvals": approvals}, budget)


@on_db_thread
def _visible_approvals(user: Any, session_id: str, user_id: Any) -> list[dict[str, Any]]:
    """The session's approvals this user may see: all of them for its user (or an admin acting for
    them); for anyone else, those whose approverRoles they hold (404 when none)."""
    session = session_get(session_id=session_id)
    if user_id not in (None, "") or session.user_id == user.pk:
        session = session_get(session_id=session_id, user_id=acting_for(user, user_id))
    approvals = session_approvals(session=session, user=user)
    if not approvals and session.user_id != user.pk and not is_admin(user):
        raise NotFound(f"session {session_id} not found", code=Code.INVALID_SESSION_ID)
    return [ToolApprovalSerializer(approval).data for approval in approvals]


class ApprovalDecisionView(DoorView):
    """`POST /api/chat/sessions/{sessionId}/approvals/{approvalId}` `{decision: approve|deny, reason?}`:
    when it decides the last pending approval of its turn, the turn goes on; with `Accept:
    text/event-stream` its events stream in the answer, otherwise `{success, approval}` at once
    (the turn can be followed with the stream endpoint)."""

    async def post(self, request: HttpRequest, sessionId: str, approvalId: str) -> HttpResponse | StreamingHttpResponse:
        budget: Budget | None = None
        try:
            decision = checked(DecisionSerializer, bodies.load_json(self.body(request) or b"{}"))
            admission = await turn.admit_action(caller_of(request))
            budget = admission.budget
            approval, ready = await _decide(admission.user, sessionId, approvalId, decision)
            going = await turn.go_on(approval.message_id) if ready else None
        except turn.Refused as refused:
            return self.refuse(refused.error, refused.budget)
        except Exception as exc:
            return self.refuse(exc, budget)
        if going is not None and wants_events(request):
            return self.stream(going.reader(), budget)
        return self.answer({"success": True, "approval": ToolApprovalSerializer(approval).data}, budget)


@on_db_thread
def _decide(user: Any, session_id: str, approval_id: str, decision: dict[str, Any]) -> tuple[Any, bool]:
    session = session_get(session_id=session_id)
    return approval_decide(
        approval_id=approval_id,
        session_id=session.pk,
        user=user,
        approve=decision["decision"] == "approve",
        reason=decision.get("reason", ""),
    )


_SESSION_ID = OpenApiParameter("sessionId", str, OpenApiParameter.PATH)


# drf-spectacular documents DRF views only (chat.doors.schema): these carry the schema of the views above.
@extend_schema(
    operation_id="chat_session_stream",
    parameters=[
        _SESSION_ID,
        OpenApiParameter("Last-Event-ID", str, OpenApiParameter.HEADER, required=False, description="the id of the last event received"),
        OpenApiParameter("lastEventId", str, required=False, description="as Last-Event-ID, for clients that cannot set headers"),
        OpenApiParameter("userId", str, required=False),
    ],
    responses={(200, "text/event-stream"): OpenApiTypes.STR, 204: None},
    description="The events of the session's latest turn after Last-Event-ID, then live until its `done` or `error`. 204 when "
    "the session has no turn running or kept.",
)
@api_view(["GET"])
def stream_openapi(request: Any, sessionId: str) -> HttpResponse:  # pragma: no cover - documentation only
    raise AssertionError


@extend_schema(
    operation_id="chat_session_stop",
    parameters=[_SESSION_ID],
    request=inline_serializer("SessionStopRequest", {"userId": serializers.CharField(required=False)}),
    responses=envelope("SessionStopResponse", stopped=serializers.BooleanField(help_text="false when no turn was running")),
)
@api_view(["POST"])
def stop_openapi(request: Any, sessionId: str) -> HttpResponse:  # pragma: no cover - documentation only
    raise AssertionError


@extend_schema(
    operation_id="chat_session_approvals",
    parameters=[_SESSION_ID, OpenApiParameter("userId", str, required=False)],
    responses=envelope("ApprovalsResponse", approvals=ToolApprovalSerializer(many=True)),
)
@api_view(["GET"])
def approvals_openapi(request: Any, sessionId: str) -> HttpResponse:  # pragma: no cover - documentation only
    raise AssertionError


@extend_schema(
    operation_id="chat_session_approval_decide",
    parameters=[_SESSION_ID, OpenApiParameter("approvalId", str, OpenApiParameter.PATH)],
    request=DecisionSerializer,
    responses={
        (200, "application/json"): envelope("ApprovalDecisionResponse", approval=ToolApprovalSerializer()),
        (200, "text/event-stream"): OpenApiTypes.STR,
    },
    description="Decide a tool call that waits for a person. 409 ALREADY_DECIDED for one decided before.",
)
@api_view(["POST"])
def decision_openapi(request: Any, sessionId: str, approvalId: str) -> HttpResponse:  # pragma: no cover - documentation only
    raise AssertionError
