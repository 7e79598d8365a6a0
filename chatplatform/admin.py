"""Django admin of the worker's bookkeeping (periodic runs, live workers) and the audit log,
read-only; and the objects of the database-backed store (listed and deletable; `manage.py
store_put` writes them).
Task results are the backend's own: django-tasks-db's admin, or django-rq's dashboard."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from chatplatform.models import AuditEntry, PeriodicRun, StoredObject, WorkerProcess


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


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """The audit log: every admin write, read-only (chatplatform.audit writes it)."""

    list_display = ("at", "actor", "action", "object_type", "object_id", "object_repr", "changed_fields")
    list_filter = ("action", "object_type", "actor", ("at", admin.DateFieldListFilter))
    search_fields = ("object_id", "object_repr", "actor")
    date_hierarchy = "at"
    fields = ("at", "actor", "action", "object_type", "object_id", "object_repr", "changes_table")
    readonly_fields = fields

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="fields")
    def changed_fields(self, entry: AuditEntry) -> str:
        return ", ".join(entry.changes)

    @admin.display(description="changes")
    def changes_table(self, entry: AuditEntry) -> str:
        rows = format_html_join(
            "",
            "<tr><th>{}</th><td><pre>{}</pre></td><td><pre>{}</pre></td></tr>",
            ((name, _shown(change.get("before")), _shown(change.get("after"))) for name, change in entry.changes.items()),
        )
        return format_html("<table><thead><tr><th>field</th><th>before</th><th>after</th></tr></thead><tbody>{}</tbody></table>", rows)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


@admin.register(StoredObject)
class StoredObjectAdmin(ReadOnlyAdmin):
    list_display = ("name", "size", "modified")
    search_fields = ("name",)
    exclude = ("content",)
