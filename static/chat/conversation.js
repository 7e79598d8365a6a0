// The conversation pane: which session it shows, its messages, and the address that follows it
// (`/chat/<chatAppId>/<sessionId>`, so a reload or a shared link opens it again). Opening another
// session or a new chat replaces the messages without a reload; Back and Forward move between them.
// A session opened while its turn runs shows the answer so far and follows it live (chat/turn).

import { ApiError } from "chat/api";
import { el } from "chat/dom";

export class Conversation {
  // `pane`: the messages' log; `missing`: the server's "not found" notice, if it showed one;
  // `suggestions`: the chat app's suggestions, shown only before the first message;
  // `sweep()`: drops the widgets of messages no longer shown; `resume(sessionId)`: follows the
  // session's running turn; `leave()`: stops following the one of the session left.
  constructor({ pane, missing, suggestions, sessionId, chatAppId, api, notices, sessions, messages, sweep, resume, leave }) {
    this.pane = pane;
    this.missing = missing;
    this.suggestions = suggestions;
    this.sessionId = sessionId;
    this.chatAppId = chatAppId;
    this.api = api;
    this.notices = notices;
    this.sessions = sessions;
    this.messages = messages;
    this.sweep = sweep;
    this.resume = resume;
    this.leave = leave;
    this.loading = 0; // bumped at each switch: a slow load of a session left meanwhile is dropped
    // Branches (docs/api.md, "Branches"): `olderBranch` while the branch shown is a version the
    // person stepped to (‹ n/m ›), not the session's newest.
    this.olderBranch = false;

    // The conversation stays scrolled to its end while what it shows grows, as long as the person
    // has not scrolled up, without reading the layout in the middle of a frame: the position is
    // read at scroll events, and the growth is followed from a ResizeObserver, which runs once
    // layout is done.
    this.stuckToEnd = true;
    this.follower = new ResizeObserver(() => {
      if (this.stuckToEnd) this.scrollToEnd();
    });
    pane.addEventListener("scroll", () => {
      this.stuckToEnd = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 48;
    });
    window.addEventListener("popstate", () => {
      const shown = this.fromPath();
      if (shown) this.open(shown);
      else this.newChat();
    });
    history.replaceState({ sessionId: this.sessionId }, "", location.href);
  }

  href(sessionId) {
    return `/chat/${encodeURIComponent(this.chatAppId)}/${sessionId ? encodeURIComponent(sessionId) : ""}`;
  }

  fromPath() {
    const rest = location.pathname.slice(this.href(null).length);
    return rest ? decodeURIComponent(rest) : null;
  }

  // The session a turn started from a new chat becomes the one shown, if the person is still there.
  adopt(sessionId) {
    if (this.sessionId !== null) return;
    this.sessionId = sessionId;
    history.replaceState({ sessionId }, "", this.href(sessionId));
  }

  async open(sessionId, { push = false, throughMessageId = null } = {}) {
    const loading = this.switchTo(sessionId, push ? "push" : null);
    this.notices.say("Loading the conversation…");
    let stored;
    let feedback;
    let approvals;
    try {
      [{ messages: stored }, { feedback }, { approvals }] = await Promise.all([
        this.api.messages(sessionId, 200, throughMessageId),
        this.api.feedbackOf(sessionId),
        // The cards of waiting tool calls: the conversation shows without them if they cannot be read.
        this.api.approvals(sessionId).catch(() => ({ approvals: [] })),
      ]);
    } catch (error) {
      if (loading !== this.loading) return;
      this.notices.say("");
      if (error instanceof ApiError && error.code === "INVALID_SESSION_ID") {
        this.newChat({ history: "replace" });
        this.notices.alert("This conversation was not found: it may have been deleted, or it belongs to another account.");
      } else {
        this.notices.showError(error);
      }
      return;
    }
    if (loading !== this.loading) return;
    this.olderBranch = Boolean(throughMessageId);
    const given = new Map();
    for (const item of feedback) if (item.messageId && !given.has(item.messageId)) given.set(item.messageId, item); // newest first
    this.show(...stored.map((message) => this.messages.stored(message, sessionId, given.get(message.messageId), approvals)));
    document.title = this.sessions.pageTitle(sessionId);
    this.notices.say("");
    this.scrollToEnd();
    // A turn runs at the session's newest branch: an older one shown has none to follow.
    if (!throughMessageId) this.resume(sessionId);
  }

  // ‹ n/m ›: another version of a message, with what followed it (its newest descendant's branch).
  step(messageId) {
    if (this.sessionId) this.open(this.sessionId, { throughMessageId: messageId });
  }

  // The message `node` and all after it give way to a new version (chat/turn).
  removeFrom(node) {
    const nodes = [...this.pane.children];
    this.remove(...nodes.slice(nodes.indexOf(node)));
    this.olderBranch = false; // the new version is the session's newest branch
  }

  lastAnswerId() {
    return [...this.pane.querySelectorAll('[data-message-role="assistant"][data-message-id]')].at(-1)?.dataset.messageId ?? null;
  }

  // `history`: "push" for a new entry (the person chose it), "replace" to correct this one.
  newChat({ history: how = null } = {}) {
    this.olderBranch = false;
    this.switchTo(null, how);
    document.title = this.sessions.pageTitle(null);
    this.notices.say("");
  }

  switchTo(sessionId, how) {
    this.leave();
    this.loading += 1;
    this.sessionId = sessionId;
    if (how === "push") history.pushState({ sessionId }, "", this.href(sessionId));
    else if (how === "replace") history.replaceState({ sessionId }, "", this.href(sessionId));
    this.missing?.remove();
    this.notices.clear();
    this.sessions.render();
    this.show();
    return this.loading;
  }

  show(...nodes) {
    this.follower.disconnect();
    this.pane.replaceChildren(...nodes);
    this.watch(nodes);
    this.sweep();
    this.changed();
  }

  add(...nodes) {
    this.pane.append(...nodes);
    this.watch(nodes);
    this.changed();
  }

  // The answer shown with this id (chat/messages), if any.
  answerOf(messageId) {
    const article = [...this.pane.querySelectorAll('[data-message-role="assistant"]')].find((node) => node.dataset.messageId === messageId);
    return article ? this.messages.answerOf(article) : null;
  }

  shows(messageId) {
    return [...this.pane.querySelectorAll("[data-message-id]")].some((node) => node.dataset.messageId === messageId);
  }

  // The answers shown whose tool calls still wait for a decision.
  waitingAnswers() {
    const articles = new Set([...this.pane.querySelectorAll('.approval[data-status="pending"]')].map((card) => card.closest("article")));
    return [...articles].map((article) => this.messages.answerOf(article)).filter(Boolean);
  }

  remove(...nodes) {
    for (const node of nodes) {
      node.remove();
      this.follower.unobserve(node);
    }
    this.changed();
  }

  // Not a CSS :has() rule: one over the whole conversation costs a style pass per streamed frame.
  changed() {
    if (this.suggestions) this.suggestions.hidden = this.pane.querySelector("[data-message-role]") !== null;
  }

  // Where a widget rendered `inline` by the runtime goes: after the last message.
  inlineHost() {
    const box = el("div", { class: "widget-inline-host" });
    this.add(box);
    return box;
  }

  // What the pane shows keeps the end in view as it grows (unless the person scrolled up): an
  // answer as it streams, and a widget that grows once painted, after its answer is complete.
  watch(nodes) {
    for (const node of nodes) if (node instanceof Element) this.follower.observe(node);
  }

  scrollToEnd() {
    this.pane.scrollTop = this.pane.scrollHeight;
    this.stuckToEnd = true;
  }
}
