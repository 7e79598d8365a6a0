// Code highlighting off the page's main thread (chat/render sends the blocks here): loading
// highlight.js and compiling a language's grammar take tens of milliseconds once each, which in
// the page would hold up a streaming answer's frames (docs/decisions.md, "The browser").
// A message {id, text, language, library} (library: highlight.js's URL, as the page's import
// map resolves it) is answered {id, html, language}: highlight.js's escaped HTML, which the page
// sanitizes like all model output, or html null for a block left plain.

const AUTO_DETECT_LIMIT = 5000; // characters: guessing the language of a longer block is not worth its time
let library = null;

self.addEventListener("message", async ({ data }) => {
  library ??= import(data.library).then((module) => module.default);
  const hljs = await library;
  const language = data.language && hljs.getLanguage(data.language) ? data.language : null;
  if (!language && data.text.length > AUTO_DETECT_LIMIT) {
    self.postMessage({ id: data.id, html: null, language: null });
    return;
  }
  const result = language ? hljs.highlight(data.text, { language, ignoreIllegals: true }) : hljs.highlightAuto(data.text);
  self.postMessage({ id: data.id, html: result.value, language: result.language || "plaintext" });
});
