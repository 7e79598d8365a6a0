// Copy buttons (docs/api.md, "The chat page"): an answer's Markdown source, a code block's code.
// The confirmation is both seen (the button says "Copied") and heard (a polite live region beside it).

import { el } from "chat/dom";

const SHOWN_MS = 2000;

// A Copy button and its status; `text()` is read at the click, so a growing answer copies all of it.
export function copyButton({ label, text, className = "" }) {
  const status = el("span", { class: "copy-status visually-hidden", "aria-live": "polite" }); // not role=status: the page has one status line
  let timer = 0;
  const say = (shown, heard) => {
    button.dataset.label = shown;
    status.textContent = heard;
    clearTimeout(timer);
    timer = setTimeout(() => {
      button.dataset.label = "Copy";
      status.textContent = "";
    }, SHOWN_MS);
  };
  const button = el("button", {
    type: "button",
    class: `button button-small copy ${className}`.trim(),
    "aria-label": label,
    title: label,
    "data-label": "Copy", // drawn by CSS (chat.css, .copy): the message's text stays what was said
    onclick: async () => {
      try {
        // The Clipboard API needs a secure context (https, or localhost): elsewhere it is missing.
        if (!navigator.clipboard) throw new Error("no clipboard");
        await navigator.clipboard.writeText(text());
        say("Copied", "Copied to the clipboard");
      } catch {
        say("Not copied", "Could not copy: the browser refused the clipboard");
      }
    },
  });
  return el("span", { class: "copy-wrap" }, button, status);
}
