// The Django admin's editors (chatplatform/admin_forms.py). The textarea stays the form's value:
// each editor writes its whole text back on every change, valid or not, so the server judges it.
(function () {
  "use strict";

  function jsonEditor(textarea) {
    if (textarea.dataset.editorReady || typeof JSONEditor === "undefined") return;
    textarea.dataset.editorReady = "1";
    var box = document.createElement("div");
    box.className = "platform-json-editor-box";
    box.style.height = textarea.dataset.height || "220px";
    textarea.parentNode.insertBefore(box, textarea.nextSibling);
    var editor = new JSONEditor(box, {
      mode: "code",
      modes: ["code", "tree", "text"],
      onChange: function () {
        try {
          textarea.value = editor.getText();
        } catch (error) {
          // tree mode cannot give text while the document is invalid; the text modes always can
        }
      },
    });
    editor.setText(textarea.value);
    textarea.style.display = "none";
  }

  function codeEditor(textarea) {
    if (textarea.dataset.editorReady || typeof CodeMirror === "undefined") return;
    textarea.dataset.editorReady = "1";
    var editor = CodeMirror.fromTextArea(textarea, {
      mode: "javascript",
      lineNumbers: true,
      indentUnit: 2,
      tabSize: 2,
      matchBrackets: true,
      viewportMargin: Infinity,
    });
    editor.on("change", function () {
      editor.save();
    });
  }

  function start() {
    document.querySelectorAll("textarea.platform-json-editor").forEach(jsonEditor);
    document.querySelectorAll("textarea.platform-code-editor").forEach(codeEditor);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
