"""Django admin of knowledge bases: the same rules as the Admin API (through the same services),
the documents of a base with their status, an upload form, and a "test a query" box that shows
exactly the results a model would get."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from rest_framework import serializers

from chatplatform.admin_forms import AdminForm, JSONEditor, JSONField, ServiceAdmin
from chatplatform.api.errors import ApiError
from chatplatform.api.exceptions import flatten_errors
from chatplatform.api.fields import whole_number
from chatplatform.api.permissions import caller_id
from knowledge import ingest, selectors, services
from knowledge.models import Document, KnowledgeBase
from knowledge.serializers import QUERY_MAX_CHARS, TOP_K_MAX, validate_knowledge_base

# Wire name → model field of the write serializer's top-level fields (retrieval is spread below).
_FIELDS = {
    "knowledgeBaseId": "knowledge_base_id",
    "name": "name",
    "description": "description",
    "source": "source",
    "externalId": "external_id",
    "accessRules": "access_rules",
}
_RETRIEVAL = {"strategy": "strategy", "topK": "top_k", "mode": "mode"}


class KnowledgeBaseForm(AdminForm):
    """Runs the Admin API's validation in clean(); the admin saves through knowledge.services."""

    class Meta:
        model = KnowledgeBase
        fields = ["knowledge_base_id", "name", "description", "source", "external_id", "strategy", "top_k", "mode", "access_rules"]
        field_classes = {"access_rules": JSONField}
        widgets = {"access_rules": JSONEditor(height="160px")}
        help_texts = {
            "description": "Told to the model: what the collection holds and when to search it.",
            "mode": "Semantic and hybrid need CHAT_EMBEDDING_MODEL.",
            "external_id": "The provider's knowledge base id (source bedrock only).",
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        assert cleaned is not None  # ModelForm.clean returns cleaned_data
        if self.errors:
            return cleaned
        adding = self.instance._state.adding
        data = {wire: cleaned.get(field) for wire, field in _FIELDS.items() if field in cleaned}
        data["externalId"] = data.get("externalId") or None
        data["retrieval"] = {wire: cleaned.get(field) for wire, field in _RETRIEVAL.items()}
        data["knowledgeBaseId"] = cleaned.get("knowledge_base_id") if adding else self.instance.pk
        existing = None if adding else KnowledgeBase.objects.get(pk=self.instance.pk)
        try:
            validate_knowledge_base(data, existing=existing)
        except serializers.ValidationError as exc:
            assert isinstance(exc.detail, dict)  # a serializer's errors, keyed by field
            for name, detail in exc.detail.items():
                field = _FIELDS.get(name) or ("mode" if name == "retrieval" else None)
                self.add_error(field if field in self.fields else None, flatten_errors(detail, name))
        self.knowledge_base_data = data
        return cleaned


class DocumentInline(admin.TabularInline):
    """The base's documents with their status, read-only (deleting goes through DocumentAdmin)."""

    model = Document
    fields = ("title", "status", "chunk_count", "mime_type", "size", "source_url", "error", "create_date")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ("-create_date",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        return super().get_queryset(request).defer("content")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(ServiceAdmin):
    form = KnowledgeBaseForm
    change_form_template = "admin/knowledge/knowledgebase/change_form.html"
    inlines = [DocumentInline]
    list_display = ("knowledge_base_id", "name", "source", "strategy", "mode", "documents", "chunks", "last_update")
    list_filter = ("source", "strategy", "mode")
    search_fields = ("knowledge_base_id", "name", "description")
    readonly_fields = ("created_by", "last_updated_by", "create_date", "last_update")

    def get_queryset(self, request: HttpRequest) -> QuerySet[KnowledgeBase]:
        return selectors.with_counts(super().get_queryset(request))

    @admin.display(description="documents", ordering="document_count")
    def documents(self, base: KnowledgeBase) -> int:
        return base.document_count  # type: ignore[attr-defined]  # annotated by get_queryset

    @admin.display(description="chunks", ordering="chunk_total")
    def chunks(self, base: KnowledgeBase) -> int:
        return base.chunk_total  # type: ignore[attr-defined]  # annotated by get_queryset

    def get_readonly_fields(self, request: HttpRequest, obj: KnowledgeBase | None = None) -> tuple[str, ...]:
        return (*self.readonly_fields, "knowledge_base_id") if obj is not None else self.readonly_fields

    def service_save(self, form: KnowledgeBaseForm, *, user_id: str) -> KnowledgeBase:
        return services.knowledge_base_upsert(data=form.knowledge_base_data, user_id=user_id)

    def delete_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        problem = services.knowledge_base_in_use(knowledge_base_id=unquote(object_id))
        if problem:
            messages.error(request, f"Cannot delete: {problem}.")
            return HttpResponseRedirect(reverse("admin:knowledge_knowledgebase_change", args=[object_id]))
        return super().delete_view(request, object_id, extra_context)

    def service_delete(self, obj: KnowledgeBase, *, user_id: str) -> None:
        services.knowledge_base_delete(knowledge_base_id=obj.pk, user_id=user_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[KnowledgeBase]) -> None:
        # A base in use is reported and the others are deleted (the service refuses it).
        for base in queryset:
            try:
                self.delete_model(request, base)
            except ApiError as exc:
                messages.error(request, f"Not deleted: {exc.message}")

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """`?q=...&top_k=...` runs the query box: the results are shown as the model would get them."""
        context = dict(extra_context or {})
        text = request.GET.get("q", "").strip()[:QUERY_MAX_CHARS]
        context["accepted_types"] = ", ".join(ingest.ACCEPTED_TYPES)
        context["top_k_max"] = TOP_K_MAX
        if text:
            top_k = request.GET.get("top_k", "")
            context["query_text"] = text
            number = whole_number(top_k)
            context["query_top_k"] = number if number is not None and 1 <= number <= TOP_K_MAX else None
            try:
                found = selectors.search(knowledge_base=unquote(object_id), query=text, top_k=context["query_top_k"])
                context["query_results"] = [{"n": n, **result.as_wire(), "heading": result.heading} for n, result in enumerate(found, 1)]
            except (selectors.SearchError, ApiError) as exc:
                context["query_error"] = str(exc)
        return super().change_view(request, object_id, form_url, context)

    def get_urls(self) -> list[URLPattern]:
        upload = path(
            "<path:object_id>/upload/",
            self.admin_site.admin_view(self.upload_view),
            name=f"{self.opts.app_label}_{self.opts.model_name}_upload",
        )
        return [upload, *super().get_urls()]

    def upload_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST `file` (+ `title`, `source_url`): add a document through knowledge.services.document_add."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        base = self.get_object(request, unquote(object_id))
        if base is None:
            raise Http404("knowledge base not found")
        if not self.has_change_permission(request, base):
            raise PermissionDenied
        change_url = reverse("admin:knowledge_knowledgebase_change", args=[quote(base.pk)])
        upload = request.FILES.get("file")
        if upload is None:
            messages.error(request, "file: choose a file to upload")
            return HttpResponseRedirect(change_url)
        try:
            document = services.document_add(
                knowledge_base_id=base.pk,
                title=request.POST.get("title", "").strip() or upload.name or "",
                data=upload.read(),
                mime_type=ingest.mime_type_of(upload.content_type, upload.name),
                source_url=request.POST.get("source_url"),
                user_id=caller_id(request),
            )
        except ApiError as exc:
            messages.error(request, f"Upload refused: {exc.message}")
            return HttpResponseRedirect(change_url)
        if document.status == "failed":
            messages.error(request, f"{document.title}: failed: {document.error}")
        else:
            messages.success(request, f"{document.title}: {document.status}, {document.chunk_count} chunks.")
        return HttpResponseRedirect(change_url)


@admin.register(Document)
class DocumentAdmin(ServiceAdmin):
    """Every document, filterable by base and status; deleting one removes its chunks (through the service)."""

    list_display = ("title", "knowledge_base", "status", "chunk_count", "mime_type", "size", "create_date")
    list_filter = ("status", "knowledge_base", "mime_type")
    search_fields = ("title", "source_url")
    fields: ClassVar[tuple[str, ...]]  # of any length: extended below
    fields = ("document_id", "knowledge_base", "title", "source_url", "mime_type", "size", "status", "chunk_count", "error")
    fields += ("embedding_model", "created_by", "create_date", "last_update")
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Document]:
        return super().get_queryset(request).defer("content").select_related("knowledge_base")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # documents are uploaded on their knowledge base's page

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def service_delete(self, obj: Document, *, user_id: str) -> None:
        services.document_delete(knowledge_base_id=obj.knowledge_base_id, document_id=str(obj.document_id), user_id=user_id)
