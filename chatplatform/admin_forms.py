"""What every Django admin form of the platform shares: JSON fields that never lose what was typed,
help texts shown as text, and the code editor of inline tools.

JSON: the stock django-json-widget posts the editor's last *valid* value, so malformed or emptied
JSON was silently replaced by the stored value and "changed successfully". Here the posted text is
always what the operator typed; the form field refuses malformed and empty text on that field, and
the form shows the same text again.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.html import conditional_escape

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
