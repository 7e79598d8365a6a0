"""Django admin of the worker's bookkeeping: periodic runs and live workers (read-only); and the
objects of the database-backed store (listed and deletable; `manage.py store_put` writes them).
Task results are the backend's own: django-tasks-db's admin, or django-rq's dashboard."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from chatplatform.models import PeriodicRun, StoredObject, WorkerProcess


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PeriodicRun)
class PeriodicRunAdmin(ReadOnlyAdmin):
    list_display = ("job", "period_start", "claimed_by", "runs", "ran_on", "outcome", "started_at", "finished_at")
    list_filter = ("job", "outcome")
    ordering = ("-period_start",)


@admin.register(WorkerProcess)
class WorkerProcessAdmin(ReadOnlyAdmin):
    list_display = ("worker_id", "hostname", "pid", "backend", "started_at", "last_seen")


@admin.register(StoredObject)
class StoredObjectAdmin(ReadOnlyAdmin):
    list_display = ("name", "size", "modified")
    search_fields = ("name",)
    exclude = ("content",)
