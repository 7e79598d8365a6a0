"""What every Django admin form of the platform shares: JSON fields that never lose what was typed,
help texts shown as text, the code editor of inline tools, and the admin that saves through the services.

JSON: the stock django-json-widget posts the editor's last *valid* value, so malformed or emptied
JSON was silently replaced by the stored value and "changed successfully". Here the posted text is
always what the operator typed; the form field refuses malformed and empty text on that field, and
the form shows the same text again.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.html import conditional_escape

from chatplatform.api.permissions import caller_id

EMPTY_JSON = "Enter JSON; an empty field is not JSON (write null, [] or {} for none)."


class JSONEditor(forms.Textarea):
    """A textarea holding the JSON text, which a script turns into a code editor (jsoneditor's, in
    code mode) that writes every keystroke back, valid or not. Without the script it stays a textarea."""

    def __init__(self, height: str = "220px") -> None:
        super().__init__(attrs={"class": "vLargeTextField platform-json-editor", "rows": 10, "data-height": height, "spellcheck": "false"})

    @property
    def media(self) -> forms.Media:
        return forms.Media(
            css={"all": ("dist/jsoneditor.min.css", "chatplatform/admin_editors.css")},
            js=("dist/jsoneditor.min.js", "chatplatform/admin_editors.js"),
        )

    def format_value(self, value: Any) -> str:
        # Valid JSON is shown indented; anything else (the operator's malformed text) as typed.
        if value is None:
            return ""
        if not isinstance(value, str):
            return json.dumps(value, indent=2, ensure_ascii=False)
        try:
            return json.dumps(json.loads(value), indent=2, ensure_ascii=False)
        except ValueError:
            return value


class JSONField(forms.JSONField):
    """forms.JSONField that refuses an empty field instead of reading it as null."""

    widget = JSONEditor

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise forms.ValidationError(EMPTY_JSON, code="empty")
        return super().to_python(value)


class CodeEditor(forms.Textarea):
    """A textarea that a script turns into a JavaScript editor with syntax highlighting (CodeMirror)."""

    def __init__(self) -> None:
        super().__init__(attrs={"class": "vLargeTextField platform-code-editor", "rows": 14, "spellcheck": "false"})

    @property
    def media(self) -> forms.Media:
        return forms.Media(
            css={"all": ("vendor/codemirror/codemirror.css", "chatplatform/admin_editors.css")},
            js=("vendor/codemirror/codemirror.js", "vendor/codemirror/mode-javascript.js", "chatplatform/admin_editors.js"),
        )


class AdminForm(forms.ModelForm):
    """Base of the platform's admin forms. The admin renders help texts as HTML (`|safe`); ours are
    plain text with `<provider>:<model>` and JSON examples in them, so they are escaped here."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            if field.help_text:
                field.help_text = conditional_escape(field.help_text)


class ServiceAdmin(admin.ModelAdmin):
    """A model admin whose writes go through the app's services, as the Admin API's do, so that their
    rules, version bumps and audit entries hold for both (docs/decisions.md, "The Django admin, the
    demo data and the audit log").

    Subclasses give `service_save` (the form's data → the saved row) and `service_delete`; a batch
    service may replace `service_delete_many`. Without `service_save`, saving is Django's own.
    """

    def service_save(self, form: Any, *, user_id: str) -> Model:
        raise NotImplementedError

    def service_delete(self, obj: Any, *, user_id: str) -> None:
        raise NotImplementedError

    def service_delete_many(self, queryset: QuerySet[Any], *, user_id: str) -> None:
        for obj in queryset:
            self.service_delete(obj, user_id=user_id)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if type(self).service_save is ServiceAdmin.service_save:
            super().save_model(request, obj, form, change)
            return
        saved = self.service_save(form, user_id=caller_id(request))
        # The admin goes on with `obj` (log entry, redirect): give it the saved row's values.
        for field in type(obj)._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding = False

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.service_delete(obj, user_id=caller_id(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self.service_delete_many(queryset, user_id=caller_id(request))
