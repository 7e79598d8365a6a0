"""Admission: who calls, counted once against their budget (docs/api.md, "Rate limits"). Every way
into the API goes through `admit`: DRF views (chatplatform.api.views.ApiView) and turns
(chat.turn.admission), whatever the transport or the credential.

In order: authenticate; count the request against the caller's budget (per client address when
nobody authenticated, so a 401 is counted too); refuse past the budget (429) before anything else,
then an authentication that failed (401).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rest_framework import exceptions

from chatplatform.api import ratelimit
from chatplatform.api.errors import RateLimited


@dataclass(frozen=True)
class Admission:
    """The caller (None when nobody authenticated), their budget, and why the request is refused (None when it is not)."""

    user: Any
    budget: ratelimit.Budget
    refusal: Exception | None = None


def admit(authenticate: Callable[[], Any], *, address: str, scope: str, budget: ratelimit.Budget | None = None) -> Admission:
    """`authenticate()` returns the user (possibly anonymous) or raises an APIException; `budget` is
    given when the request was already counted (on the event loop, by a credential known without
    a read: chat.turn.admission)."""
    refusal: Exception | None = None
    try:
        user = authenticate()
    except exceptions.APIException as exc:
        user, refusal = None, exc
    if user is not None and not user.is_authenticated:
        user = None
    if budget is None:
        budget = ratelimit.hit(scope, f"user:{user.pk}" if user is not None else f"addr:{address}")
    if budget.exceeded:
        refusal = RateLimited(budget.retry_after())
    return Admission(user, budget, refusal)
