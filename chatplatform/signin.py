"""Sign-in throttling (docs/deploy.md, "Sign-in throttling"): `/accounts/login/` and `/admin/login/`.

Failed attempts are counted per username and per client address in the shared cache (Redis when
REDIS_URL is set, so every process agrees), in a window that starts at the first failure. Once
either count reaches its limit, every attempt is refused until the window ends, even with the
right password: 429 with Retry-After and a page that says why. The lockout is in the audit log.

Django's `user_login_failed` signal does the counting (both forms authenticate through
`django.contrib.auth.authenticate`); the middleware refuses before the form is even read, so a
locked account's password is never checked. django-axes was weighed and not taken: it has one
failure limit for every parameter (not 10 per username and 50 per address) and no Retry-After.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from chatplatform import audit
from chatplatform.models import AuditAction

logger = logging.getLogger(__name__)

SIGN_IN_PATHS = frozenset({"/accounts/login/", "/admin/login/"})


@dataclass(frozen=True, slots=True)
class _Counter:
    kind: str  # "username" or "address"
    value: str
    limit: int

    @property
    def key(self) -> str:
        return f"signin:{self.kind}:{hashlib.sha256(self.value.encode()).hexdigest()[:32]}"


def _counters(request: HttpRequest, username: str) -> list[_Counter]:
    counters = [_Counter("address", request.META.get("REMOTE_ADDR") or "unknown", settings.CHAT_SIGNIN_MAX_FAILURES_PER_ADDRESS)]
    if username:
        # Django's sign-in forms match usernames exactly; the count does not let case vary around it.
        counters.append(_Counter("username", username.strip().lower(), settings.CHAT_SIGNIN_MAX_FAILURES_PER_USER))
    return counters


def _count_failure(counter: _Counter) -> int:
    """One more failure in the counter's window (opened now when there is none); the count so far."""
    window = settings.CHAT_SIGNIN_WINDOW_SECONDS
    cache.add(f"{counter.key}:since", time.time(), timeout=window)
    if cache.add(counter.key, 1, timeout=window):
        return 1
    try:
        return cache.incr(counter.key)  # atomic in Redis (INCR keeps the key's expiry) and in local memory
    except ValueError:  # the window ended between add() and incr()
        cache.add(counter.key, 1, timeout=window)
        return 1


def refusal(request: HttpRequest, username: str) -> tuple[_Counter, int] | None:
    """The counter that refuses this attempt and the seconds until its window ends; None when it may go on."""
    counters = _counters(request, username)
    values = cache.get_many([key for counter in counters for key in (counter.key, f"{counter.key}:since")])
    for counter in counters:
        if values.get(counter.key, 0) >= counter.limit:
            since = values.get(f"{counter.key}:since", time.time())
            return counter, max(1, math.ceil(since + settings.CHAT_SIGNIN_WINDOW_SECONDS - time.time()))
    return None


@receiver(user_login_failed, dispatch_uid="chatplatform.signin.count")
def _failed(sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any) -> None:
    if request is None or request.path not in SIGN_IN_PATHS:
        return  # another caller of authenticate() (OpenID Connect's callback): not a password guess
    username = str(credentials.get("username") or "")
    for counter in _counters(request, username):
        if _count_failure(counter) == counter.limit:
            address = request.META.get("REMOTE_ADDR") or "unknown"
            logger.warning("sign-in locked for %s %s after %d failures", counter.kind, counter.value, counter.limit)
            audit.record_event(
                actor=f"address {address}",
                action=AuditAction.CREATE,
                object_type="sign-in lockout",
                object_id=f"{counter.kind} {counter.value}",
                changes={
                    "failures": {"before": None, "after": counter.limit},
                    "window": {"before": None, "after": f"{settings.CHAT_SIGNIN_WINDOW_SECONDS} s from the first failure"},
                },
            )


def _refused(request: HttpRequest, counter: _Counter, retry_after: int) -> HttpResponse:
    what = "this user name" if counter.kind == "username" else "your network address"
    page = render_to_string(
        "registration/signin_refused.html",
        {"what": what, "limit": counter.limit, "minutes": math.ceil(retry_after / 60), "window": settings.CHAT_SIGNIN_WINDOW_SECONDS // 60},
    )
    response = HttpResponse(page, status=429)
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response


class SignInThrottle:
    """Refuses a sign-in POST while its username or address is locked out; every other request
    passes untouched (on the event loop: the check reads the form and the cache in a thread)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    @staticmethod
    def _check(request: HttpRequest) -> HttpResponse | None:
        found = refusal(request, str(request.POST.get("username") or ""))
        return _refused(request, *found) if found else None

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self.__acall__(request)
        if request.method == "POST" and request.path in SIGN_IN_PATHS:
            return self._check(request) or self.get_response(request)
        return self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> Any:
        if request.method == "POST" and request.path in SIGN_IN_PATHS:
            refused = await sync_to_async(self._check, thread_sensitive=True)(request)
            if refused is not None:
                return refused
        return await self.get_response(request)
