"""Webhooks (docs/api.md, "Webhooks"): the outbox rows events leave, and their delivery.

`outbox()` builds one WebhookDelivery per CHAT_WEBHOOKS endpoint subscribed to an event; the
write that causes the event stores them in its own transaction (the turn that creates a session
in its one statement), so there is no event without its cause and no cause without its event.
Nothing on a request's path waits for a receiver: the worker delivers (`deliver_due`, a poller).

Each attempt POSTs the body frozen at the event with `X-Webhook-Event`, `X-Webhook-Id` (the row's
id: the same on every retry, unique per event and endpoint), `X-Webhook-Timestamp` (Unix seconds
of the attempt) and `X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`. A
non-2xx answer, an error or no answer within CHAT_WEBHOOK_TIMEOUT_SECONDS is retried with
exponential backoff and jitter for CHAT_WEBHOOK_RETRY_HOURS, then the delivery is failed. Every
attempt is recorded. Secrets live only in the setting: never in a row, the admin or a log line.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Q
from django.utils import timezone

from chat.webhooks.models import DeliveryState, WebhookAttempt, WebhookDelivery
from chatplatform import tasks, telemetry

logger = logging.getLogger("chat.webhooks")

RESPONSE_EXCERPT_BYTES = 1024
USER_AGENT = "chatplatform-webhooks/1"


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def outbox(event: str, *, session_id: uuid.UUID, user_id: str, chat_app_id: str, at: datetime | None = None) -> list[WebhookDelivery]:
    """The unsaved outbox rows of `event`, one per endpoint subscribed to it (none when no endpoint is)."""
    endpoints = [entry["url"] for entry in settings.CHAT_WEBHOOKS if event in entry["events"]]
    if not endpoints:
        return []
    at = at or timezone.now()
    payload = {"event": event, "timestamp": _iso(at), "data": {"sessionId": str(session_id), "userId": user_id, "chatAppId": chat_app_id}}
    body = json.dumps(payload, separators=(",", ":"))
    traceparent = telemetry.inject({}).get("traceparent", "")
    return [
        WebhookDelivery(
            event=event,
            endpoint=url,
            body=body,
            session_id=session_id,
            created_at=at,
            retry_from=at,
            next_attempt_at=at,
            traceparent=traceparent,
        )
        for url in endpoints
    ]


def record(event: str, *, session_id: uuid.UUID, user_id: str, chat_app_id: str, at: datetime | None = None) -> None:
    """Store `event`'s outbox rows; call inside the transaction of the write that causes it."""
    rows = outbox(event, session_id=session_id, user_id=user_id, chat_app_id=chat_app_id, at=at)
    if rows:
        WebhookDelivery.objects.bulk_create(rows)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """`X-Webhook-Signature`'s value (docs/api.md, "Webhooks"); receivers compute the same to verify."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def shown_url(url: str) -> str:
    """An endpoint as the admin and logs show it: a password in the URL is masked."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = f"{parts.username}:****@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=host))


def send_again(delivery_ids: Iterable[Any]) -> int:
    """Queue deliveries for a new attempt now, with a new retry window (the admin's "send again")."""
    now = timezone.now()
    return WebhookDelivery.objects.filter(pk__in=list(delivery_ids)).update(
        state=DeliveryState.PENDING, next_attempt_at=now, retry_from=now, lease_until=None
    )


# --- Delivery, by the worker ---------------------------------------------------------------------


@dataclass
class _Outcome:
    delivery: WebhookDelivery
    started_at: datetime
    duration_ms: int
    status_code: int | None = None
    error: str = ""
    excerpt: str = ""

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def _lease() -> timedelta:
    """How long a claimed delivery is the claimant's: its attempt's time limit, twice, and a second."""
    return timedelta(seconds=2 * settings.CHAT_WEBHOOK_TIMEOUT_SECONDS + 1)


def _due() -> Any:
    now = timezone.now()
    return WebhookDelivery.objects.filter(state=DeliveryState.PENDING, next_attempt_at__lte=now).filter(
        Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    )


def _claim(limit: int) -> list[WebhookDelivery]:
    """Up to `limit` due deliveries, leased to this worker (index delivery_due). A read first, so an
    idle poll takes no write lock (SQLite has one for the whole database)."""
    if not _due().exists():
        return []
    with transaction.atomic():
        due = _due().order_by("next_attempt_at")
        if connections["default"].vendor == "postgresql":
            due = due.select_for_update(skip_locked=True)
        claimed = list(due[:limit])
        if claimed:
            WebhookDelivery.objects.filter(pk__in=[row.pk for row in claimed]).update(lease_until=timezone.now() + _lease())
    return claimed


class _Sender:
    """An event loop and HTTP client of the delivering thread, kept between polls (connections to
    a receiver are reused)."""

    def __init__(self) -> None:
        import httpx  # by the delivering thread of the worker: not when Django starts

        self.loop = asyncio.new_event_loop()
        self.client = httpx.AsyncClient(follow_redirects=False, headers={"User-Agent": USER_AGENT})

    def send(self, deliveries: list[WebhookDelivery], secrets: dict[str, str], stop: threading.Event) -> list[_Outcome]:
        return self.loop.run_until_complete(self._send_all(deliveries, secrets, stop))

    async def _send_all(self, deliveries: list[WebhookDelivery], secrets: dict[str, str], stop: threading.Event) -> list[_Outcome]:
        slots = asyncio.Semaphore(settings.CHAT_WEBHOOK_CONCURRENCY)

        async def one(delivery: WebhookDelivery) -> _Outcome | None:
            async with slots:
                if stop.is_set():
                    return None  # not started: released below
                return await self._attempt(delivery, secrets.get(delivery.endpoint))

        outcomes = await asyncio.gather(*(one(delivery) for delivery in deliveries))
        return [outcome for outcome in outcomes if outcome is not None]

    async def _attempt(self, delivery: WebhookDelivery, secret: str | None) -> _Outcome:
        from httpx import HTTPError

        started, clock = timezone.now(), time.perf_counter()
        outcome = _Outcome(delivery, started, 0)
        if secret is None:
            outcome.error = "the endpoint is no longer in CHAT_WEBHOOKS"
            return outcome
        timeout = settings.CHAT_WEBHOOK_TIMEOUT_SECONDS
        body = delivery.body.encode()
        stamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "X-Webhook-Event": delivery.event,
            "X-Webhook-Id": str(delivery.delivery_id),
            "X-Webhook-Timestamp": str(stamp),
            "X-Webhook-Signature": sign(secret, stamp, body),
        }
        if delivery.traceparent:  # the worker sends the trace context of the turn that caused the event
            headers["traceparent"] = delivery.traceparent
        try:
            async with asyncio.timeout(timeout):
                async with self.client.stream("POST", delivery.endpoint, content=body, headers=headers, timeout=timeout) as response:
                    outcome.status_code = response.status_code
                    excerpt = b""
                    async for chunk in response.aiter_bytes():
                        excerpt += chunk
                        if len(excerpt) >= RESPONSE_EXCERPT_BYTES:
                            break
                    outcome.excerpt = excerpt[:RESPONSE_EXCERPT_BYTES].decode(errors="replace")
        except TimeoutError:
            outcome.error = f"no answer within {timeout:g} s"
        except HTTPError as exc:
            outcome.error = f"{type(exc).__name__}: {exc}"[:2000] if str(exc) else type(exc).__name__
        if outcome.status_code is not None and not outcome.delivered and not outcome.error:
            outcome.error = f"answered {outcome.status_code}"
        outcome.duration_ms = round((time.perf_counter() - clock) * 1000)
        return outcome


_senders = threading.local()


def _sender() -> _Sender:
    sender = getattr(_senders, "sender", None)
    if sender is None:
        sender = _senders.sender = _Sender()
    return sender


def _settle(outcomes: list[_Outcome], released: list[WebhookDelivery]) -> None:
    """Record each attempt and what follows it: delivered, a retry after backoff, or failed."""
    now = timezone.now()
    window = timedelta(hours=settings.CHAT_WEBHOOK_RETRY_HOURS)
    changed = []
    for outcome in outcomes:
        delivery = outcome.delivery
        delivery.attempts += 1
        delivery.lease_until = None
        delivery.last_status = outcome.status_code
        delivery.last_error = outcome.error
        if outcome.delivered:
            delivery.state, delivery.delivered_at = DeliveryState.DELIVERED, now
        elif now - delivery.retry_from >= window or outcome.error == "the endpoint is no longer in CHAT_WEBHOOKS":
            delivery.state = DeliveryState.FAILED
            logger.error(
                "webhook %s %s to %s failed for good: %s", delivery.event, delivery.pk, shown_url(delivery.endpoint), outcome.error
            )
        else:
            delay = tasks.backoff_seconds(delivery.attempts, base=settings.CHAT_WEBHOOK_BACKOFF_SECONDS)
            delivery.next_attempt_at = now + timedelta(seconds=delay)
            logger.info(
                "webhook %s %s to %s: %s; retry in %.1f s", delivery.event, delivery.pk, shown_url(delivery.endpoint), outcome.error, delay
            )
        changed.append(delivery)
    for delivery in released:
        delivery.lease_until = None
        changed.append(delivery)
    attempts = [
        WebhookAttempt(
            delivery=outcome.delivery,
            number=outcome.delivery.attempts,
            started_at=outcome.started_at,
            duration_ms=outcome.duration_ms,
            status_code=outcome.status_code,
            error=outcome.error,
            response_excerpt=outcome.excerpt,
            worker=tasks.worker_id,
        )
        for outcome in outcomes
    ]
    fields = ["attempts", "lease_until", "last_status", "last_error", "state", "delivered_at", "next_attempt_at"]
    with transaction.atomic():
        WebhookAttempt.objects.bulk_create(attempts)
        WebhookDelivery.objects.bulk_update(changed, fields)


@tasks.poller
def deliver_due(stop: threading.Event) -> int:
    """Attempt the deliveries due now (a batch); those claimed but not started when `stop` came are released."""
    claimed = _claim(2 * settings.CHAT_WEBHOOK_CONCURRENCY)
    if not claimed:
        return 0
    secrets = {entry["url"]: entry["secret"] for entry in settings.CHAT_WEBHOOKS}
    outcomes = _sender().send(claimed, secrets, stop)
    attempted = {outcome.delivery.pk for outcome in outcomes}
    _settle(outcomes, [delivery for delivery in claimed if delivery.pk not in attempted])
    return len(claimed)
