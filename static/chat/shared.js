// A shared conversation (/shared/<shareId>, docs/api.md "Share links"): its answers' Markdown drawn
// as the chat page draws it, through the same sanitizing renderer; widget tags stay inert, with no
// chat app's widgets to run them. Without this script the page shows the text as it was sent.

import { INERT_TAGS, MessageRenderer } from "chat/render";

for (const text of document.querySelectorAll('.shared-messages [data-message-role="assistant"] .message-text')) {
  const body = document.createElement("div");
  body.className = "message-body";
  new MessageRenderer(body, { tags: INERT_TAGS }).replace(text.textContent);
  text.replaceWith(body);
}
document.body.dataset.ready = "";
