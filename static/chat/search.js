// The search box over the sidebar: this person's conversations in the chat app holding every word
// typed, best match first, each with the passage that matched (docs/api.md, "Searching one's
// conversations"). While it holds words, its results take the list's place.

import { el } from "chat/dom";

const PAUSE_MS = 250; // typing pauses this long before the search runs

export class SessionSearch {
  // `form`: the search form; `results`: the list it fills; `list`: the sessions' list it hides;
  // `open(sessionId)` and `href(sessionId)`: as the sidebar's links.
  constructor({ form, results, list, api, notices, chatAppId, open, href }) {
    this.input = form.querySelector("input");
    this.results = results;
    this.list = list;
    this.api = api;
    this.notices = notices;
    this.chatAppId = chatAppId;
    this.open = open;
    this.href = href;
    this.timer = null;
    this.asked = 0; // the newest query's number: an older answer arriving late is dropped

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.run();
    });
    this.input.addEventListener("input", () => {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.run(), PAUSE_MS);
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && this.input.value) {
        event.preventDefault();
        this.input.value = "";
        this.run();
      }
    });
  }

  async run() {
    clearTimeout(this.timer);
    const q = this.input.value.trim();
    const asked = ++this.asked;
    if (!/[\p{L}\p{N}]/u.test(q)) {
      this.show(null);
      return;
    }
    try {
      const { results } = await this.api.searchSessions(this.chatAppId, q.slice(0, 200));
      if (asked === this.asked) this.show(results);
    } catch (error) {
      if (asked === this.asked) this.notices.showError(error);
    }
  }

  // `results` null: the sessions' list again.
  show(results) {
    this.list.hidden = results !== null;
    this.results.hidden = results === null;
    if (results === null) return;
    const items = results.map((result) =>
      el(
        "li",
        { class: "search-result" },
        el(
          "a",
          { href: this.href(result.sessionId), onclick: (event) => this.clicked(event, result.sessionId) },
          el("span", { class: "session-title", text: result.title || "New conversation" }),
          el("span", { class: "search-snippet", text: result.messageId ? result.snippet : "Title" }),
        ),
      ),
    );
    this.results.replaceChildren(
      ...(items.length ? items : [el("li", { class: "session-empty", text: "No conversation holds these words." })]),
    );
  }

  clicked(event, sessionId) {
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || event.button !== 0) return; // a new tab
    event.preventDefault();
    this.open(sessionId);
  }
}
