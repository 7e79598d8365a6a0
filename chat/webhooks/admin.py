"""The Django admin of webhook deliveries: each with its attempts, filters, and "send again"."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from chat.webhooks import delivery as webhooks
from chat.webhooks.models import WebhookAttempt, WebhookDelivery
from chatplatform.api.fields import whole_number


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "duration_ms", "status_code", "error", "response_excerpt", "worker")
    readonly_fields = fields
    ordering = ("number",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class EndpointFilter(admin.SimpleListFilter):
    """The endpoints of CHAT_WEBHOOKS (URLs with a password masked; secrets are never shown)."""

    title, parameter_name = "endpoint", "endpoint"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(str(index), webhooks.shown_url(entry["url"])) for index, entry in enumerate(settings.CHAT_WEBHOOKS)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        index = whole_number(self.value() or "")
        if index is None or index >= len(settings.CHAT_WEBHOOKS):
            return queryset
        return queryset.filter(endpoint=settings.CHAT_WEBHOOKS[index]["url"])


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """Webhook deliveries and their attempts (docs/api.md, "Webhooks"); "send again" queues a new attempt now."""

    list_display = (
        "delivery_id",
        "event",
        "endpoint_shown",
        "state",
        "attempts",
        "last_status",
        "created_at",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("event", EndpointFilter, "state", ("created_at", admin.DateFieldListFilter))
    search_fields = ("=delivery_id", "=session_id")
    ordering = ("-created_at",)
    inlines = [AttemptInline]
    actions = ["send_again"]
    fields = (
        "delivery_id",
        "event",
        "endpoint_shown",
        "session_id",
        "body",
        "state",
        "attempts",
        "created_at",
        "retry_from",
        "next_attempt_at",
        "delivered_at",
        "last_status",
        "last_error",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # events come from their causes

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None  # the list (and its action) only

    @admin.display(description="endpoint")
    def endpoint_shown(self, delivery: WebhookDelivery) -> str:
        return webhooks.shown_url(delivery.endpoint)

    @admin.action(description="Send again")
    def send_again(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        count = webhooks.send_again(queryset.values_list("pk", flat=True))
        self.message_user(request, f"{count} deliver{'y' if count == 1 else 'ies'} queued to be sent again.")
