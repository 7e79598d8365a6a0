// Message rendering: the one module that turns an answer's text into DOM, streamed or stored.
//
// Model output is untrusted. Markdown (marked) becomes HTML, and that HTML reaches the DOM only
// through DOMPurify: no script, event handler or javascript: URL from a model, a tool or a stored
// message ever runs. The page's Content-Security-Policy is the second wall.
//
// Streaming stays cheap for long answers: the text is cut into top-level blocks, and every block
// but the last is rendered once and frozen. Each update re-lexes and re-renders only the last,
// still growing block, at most once per animation frame. A 2,000-token answer therefore costs
// the size of its last block per frame, not the size of the whole answer.
//
// Widget tags (`<scope.tag attr="…">body</scope.tag>`, docs/widgets.md "How a tag becomes a
// widget") are cut out of the text before Markdown sees it. A complete tag is handed to the
// renderer's `tags.render`: that is where the widget runtime plugs in; without it a tag shows as
// inert text. Only the tags `tags.accepts` (enabled here, allowed from this source) are cut out;
// any other one stays in the text, where Markdown shows it escaped. While a tag's opening may
// still be arriving (`<acme.ch` at the end of the text), that end is held back a frame, so it
// never flashes as text.

import { copyButton } from "chat/copy";
import { el } from "chat/dom";
import DOMPurify from "dompurify";
import { Marked } from "marked";

const markdown = new Marked({ gfm: true, breaks: false, async: false });

const PURIFY = {
  RETURN_DOM_FRAGMENT: true,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "option", "iframe", "frame", "object", "embed", "dialog"],
  FORBID_ATTR: ["style", "id", "name"],
  ADD_ATTR: ["target"],
};

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer nofollow");
  }
});

// The sanitized DOM of some HTML: a DocumentFragment with nothing that can run.
export function sanitize(html) {
  return DOMPurify.sanitize(html, PURIFY);
}

// --- code blocks ------------------------------------------------------------------------------

// highlight.js (static/vendor/highlight, the common languages) runs in a worker
// (chat/highlight-worker), started the first time a code block is rendered, never before: most
// answers have none, and loading it or compiling a grammar in the page would hold up a streaming
// answer's frames (docs/decisions.md, "The browser").
class CodeHighlighter {
  constructor() {
    this.worker = null;
    this.waiting = new Map(); // message id → the <code> it is for
    this.sent = 0;
  }

  add(code, language) {
    this.worker ??= this.start();
    this.sent += 1;
    this.waiting.set(this.sent, code);
    this.worker.postMessage({ id: this.sent, text: code.textContent, language, library: import.meta.resolve("vendor/highlight") });
  }

  start() {
    const worker = new Worker(import.meta.resolve("chat/highlight-worker"), { type: "module" });
    worker.addEventListener("message", ({ data }) => {
      const code = this.waiting.get(data.id);
      this.waiting.delete(data.id);
      if (!code?.isConnected || data.html === null) return; // a block replaced since, or left plain
      // highlight.js escapes the code; its spans still go through the sanitizer like all model output.
      code.replaceChildren(sanitize(data.html));
      code.classList.add("hljs");
      code.dataset.language = data.language;
    });
    worker.addEventListener("error", (event) => console.error("the code highlighter failed", event.message));
    return worker;
  }
}

const highlighter = new CodeHighlighter();

// A complete code block: a bar with its language and a Copy button over it, highlighted once loaded.
function decorateCode(fragment) {
  for (const code of fragment.querySelectorAll("pre > code")) {
    const pre = code.parentElement;
    const language = /(?:^|\s)language-([\w+#.-]+)/.exec(code.className)?.[1] || "";
    const text = code.textContent;
    const block = el("div", { class: "code-block" });
    pre.replaceWith(block);
    block.append(
      el(
        "div",
        { class: "code-bar" },
        el("span", { class: "code-language", text: language }),
        copyButton({ label: language ? `Copy the ${language} code` : "Copy the code", className: "copy-code", text: () => text }),
      ),
      pre,
    );
    highlighter.add(code, language);
  }
  return fragment;
}

// --- widget tags ------------------------------------------------------------------------------

// Quoted attribute values may hold ">" and "/".
const TAG_OPEN = /<([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)((?:\s+(?:[^<>"'/]|\/(?!>)|"[^"]*"|'[^']*')*)?)\s*(\/?)>/g;
// The end of the text that may be the beginning of a tag's opening.
const PARTIAL_OPEN = /<(?:([A-Za-z0-9_-]+)(?:\.(?:([A-Za-z0-9_-]+)(\s(?:[^<>"']|"[^"]*(?:"|$)|'[^']*(?:'|$))*)?)?)?)?$/;
const ATTRIBUTE = /([A-Za-z_:][-A-Za-z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

function parseAttributes(text) {
  const attributes = {};
  for (const match of text.matchAll(ATTRIBUTE)) {
    attributes[match[1]] = match[2] ?? match[3] ?? match[4] ?? "";
  }
  return attributes;
}

// Whether `index` of `text` lies inside a fenced code block opened earlier in `text`.
function insideFence(text, index) {
  let open = null;
  for (const line of text.slice(0, index).split("\n")) {
    const fence = FENCE.exec(line);
    if (!fence) continue;
    if (open === null) open = fence[1][0];
    else if (fence[1][0] === open) open = null;
  }
  return open !== null;
}

// The first accepted widget tag opening in `text` that is not inside a code block, or null.
function findTag(text, accepts) {
  for (const match of text.matchAll(TAG_OPEN)) {
    const [opening, scope, tag, attributes, selfClosing] = match;
    if (!accepts(`${scope}.${tag}`)) continue;
    if (insideFence(text, match.index)) continue;
    return {
      start: match.index,
      end: match.index + opening.length,
      scope,
      tag,
      attributes: parseAttributes(attributes),
      selfClosing: !!selfClosing,
    };
  }
  return null;
}

// The default tag renderer: the tag's body as inert text, marked with the tag it came from.
function inertTag({ tagId, body, container }) {
  const box = document.createElement("div");
  box.className = "widget-fallback";
  box.dataset.tag = tagId;
  box.textContent = body;
  container.append(box);
}

// What a renderer does with the widget tags of its text: `render({scope, tag, tagId, attributes,
// body, container, source})` renders one complete tag into `container` (an empty element in the
// message's flow); `accepts(tagId, source)` says which tags are widgets here ("model" or "tool").
export const INERT_TAGS = { accepts: () => true, render: inertTag };

// --- the renderer -----------------------------------------------------------------------------

export class MessageRenderer {
  constructor(container, { tags = INERT_TAGS, source = "model" } = {}) {
    this.container = container;
    this.tags = tags;
    this.accepts = (tagId) => tags.accepts(tagId, source); // who wrote the text: which tags may become widgets
    this.source = source;
    this.text = "";
    this.frozenUpTo = 0; // characters of `text` rendered into frozen blocks
    this.live = document.createElement("div");
    this.live.className = "md-live";
    this.container.append(this.live);
    this.frame = 0;
  }

  // Streamed text: rendered at the next animation frame, with whatever else arrived by then.
  append(text) {
    this.text += text.replace(/\r/g, "");
    if (!this.frame) this.frame = requestAnimationFrame(() => this.render(false));
  }

  // The whole text at once (a stored message, or the stored answer after a lost connection).
  replace(text) {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    for (const node of [...this.container.childNodes]) if (node !== this.live) node.remove();
    this.live.replaceChildren();
    this.text = text.replace(/\r/g, "");
    this.frozenUpTo = 0;
    this.render(true);
  }

  // The answer is complete: render what is left, every block final.
  finish() {
    cancelAnimationFrame(this.frame);
    this.render(true);
  }

  freeze(node) {
    this.container.insertBefore(node, this.live);
  }

  freezeMarkdown(text) {
    if (text.trim()) this.freeze(decorateCode(sanitize(markdown.parse(text))));
    this.frozenUpTo += text.length;
  }

  render(final) {
    this.frame = 0;
    let tail = this.text.slice(this.frozenUpTo);
    for (let tag = findTag(tail, this.accepts); tag; tag = findTag(tail, this.accepts)) {
      this.freezeMarkdown(tail.slice(0, tag.start)); // a tag starts a block: what precedes it is complete
      tail = tail.slice(tag.start);
      const closing = `</${tag.scope}.${tag.tag}>`;
      const bodyStart = tag.end - tag.start;
      const closeAt = tag.selfClosing ? bodyStart : tail.indexOf(closing, bodyStart);
      if (closeAt < 0) {
        // Still streaming its body: a placeholder until the tag closes.
        const pending = document.createElement("div");
        pending.className = "widget-pending";
        pending.dataset.tag = `${tag.scope}.${tag.tag}`;
        pending.textContent = final ? tail : "…";
        this.live.replaceChildren(pending);
        if (final) this.frozenUpTo = this.text.length;
        return;
      }
      const end = tag.selfClosing ? bodyStart : closeAt + closing.length;
      const container = document.createElement("div");
      container.className = "widget";
      this.freeze(container);
      this.tags.render({
        scope: tag.scope,
        tag: tag.tag,
        tagId: `${tag.scope}.${tag.tag}`,
        attributes: tag.attributes,
        body: tag.selfClosing ? "" : tail.slice(bodyStart, closeAt),
        container,
        source: this.source,
      });
      this.frozenUpTo += end;
      tail = tail.slice(end);
    }
    if (final) {
      this.freezeMarkdown(tail);
      this.live.replaceChildren();
    } else {
      // A tag's opening still arriving waits for the next frame rather than show as text.
      const partial = PARTIAL_OPEN.exec(tail);
      const named = partial && partial[3] !== undefined; // the name is complete: is it a widget here?
      if (partial && (!named || this.accepts(`${partial[1]}.${partial[2]}`))) tail = tail.slice(0, partial.index);
      // Every block but the last is complete; the last may still grow (a paragraph, a list, a fence).
      const tokens = markdown.lexer(tail);
      let last = tokens.length - 1;
      while (last > 0 && tokens[last].type === "space") last -= 1;
      const liveText = tokens
        .slice(Math.max(last, 0))
        .map((token) => token.raw)
        .join("");
      if (last > 0 && tail.endsWith(liveText)) {
        this.freezeMarkdown(tail.slice(0, tail.length - liveText.length));
        tail = liveText;
      }
      this.live.replaceChildren(sanitize(markdown.parse(tail)));
    }
  }
}
