"""Content negotiation that skips the work when there is nothing to choose.

DRF parses `Accept` on every request to choose among renderers. The API views have one renderer
(JSON), so the answer is always the same, and a 406 would only hide the error envelope. Views
with several renderers (the OpenAPI schema: YAML, JSON, HTML) negotiate as usual.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request


class SingleRendererNegotiation(DefaultContentNegotiation):
    # DRF hands its list of renderers.
    def select_renderer(self, request: Request, renderers: list[Any], format_suffix: str | None = None) -> tuple[Any, str]:  # type: ignore[override]
        if len(renderers) == 1:
            return renderers[0], renderers[0].media_type
        return super().select_renderer(request, renderers, format_suffix)
