"""A session's AI insights for operators (docs/api.md, "Session insights"): read, or generated again now."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from chat.insights import analysis
from chat.insights.models import SessionInsight
from chat.insights.selectors import session_insight
from chat.insights.serializers import AnalysisSerializer, InsightsSerializer
from chat.sessions.selectors import session_get
from chat.sessions.views import SESSION_ID
from chatplatform import llm
from chatplatform.api.errors import ApiError, Code
from chatplatform.api.schema import envelope
from chatplatform.api.views import AdminApiViewSet, ok

_InsightsResponse = envelope(
    "SessionInsightsResponse",
    insights=InsightsSerializer(allow_null=True),
    analysis=AnalysisSerializer(allow_null=True, help_text="where the analysis stands; null when never requested"),
)


def _insights_answer(insight: SessionInsight | None) -> Response:
    has_record = insight is not None and insight.generated_at is not None
    return ok(
        insights=InsightsSerializer(insight).data if has_record else None,
        analysis=AnalysisSerializer(insight).data if insight is not None else None,
    )


class InsightsAdminViewSet(AdminApiViewSet):
    """`GET`/`POST /api/chat-admin/sessions/{sessionId}/insights`."""

    @extend_schema(operation_id="admin_session_insights", parameters=[SESSION_ID], responses=_InsightsResponse)
    def retrieve(self, request: Request, sessionId: str) -> Response:
        return _insights_answer(session_insight(session=session_get(session_id=sessionId)))

    @extend_schema(operation_id="admin_session_insights_regenerate", parameters=[SESSION_ID], request=None, responses=_InsightsResponse)
    def regenerate(self, request: Request, sessionId: str) -> Response:
        session = session_get(session_id=sessionId)
        try:
            analysis.regenerate(session=session)
        except (llm.ModelError, analysis.UnusableAnswer) as exc:
            raise ApiError(f"the insights model failed: {exc}", code=Code.INTERNAL_ERROR, status_code=502)
        return _insights_answer(session_insight(session=session))
