// The sidebar: this person's conversations in the chat app, newest first, each a link that opens it
// without a reload, renamed in place, and deleted after a confirmation (docs/data.md: with its
// messages and files). On a narrow screen the sidebar is a drawer its toggle opens.

import { el } from "chat/dom";

export class Sessions {
  // `sidebar`: the nav holding the list; `toggle`: the button that opens it on a narrow screen.
  // `current()`: the id of the conversation shown; `open(sessionId)`, `newChat()`: what the
  // links and the New chat button ask of the conversation; `href(sessionId)`: a session's page.
  constructor({ sidebar, toggle, api, notices, chatAppId, appTitle, current, open, newChat, href }) {
    this.sidebar = sidebar;
    this.toggle = toggle;
    this.list = sidebar.querySelector(".session-list");
    this.empty = sidebar.querySelector(".session-empty");
    this.api = api;
    this.notices = notices;
    this.chatAppId = chatAppId;
    this.appTitle = appTitle;
    this.current = current;
    this.href = href;
    this.open = open;
    this.newChat = newChat;
    this.sessions = [];
    // Sessions turns started on this page that no loaded list has shown yet: a list asked for
    // before a turn stored its session must not drop it when it arrives.
    this.started = new Map();

    sidebar.querySelector(".new-chat").addEventListener("click", () => {
      this.closeDrawer();
      newChat();
    });
    toggle.addEventListener("click", () => {
      const opening = sidebar.dataset.open !== "true";
      this.setDrawer(opening);
      if (opening) sidebar.querySelector(".new-chat").focus();
    });
    // An open conversation menu closes when the person clicks elsewhere.
    document.addEventListener("click", (event) => {
      for (const menu of this.list.querySelectorAll(".session-menu[open]")) if (!menu.contains(event.target)) menu.open = false;
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && sidebar.dataset.open === "true") {
        this.setDrawer(false);
        toggle.focus();
      }
    });
  }

  async load() {
    try {
      this.replace((await this.api.sessions(this.chatAppId)).sessions);
    } catch (error) {
      this.notices.showError(error);
    }
  }

  replace(sessions) {
    for (const session of sessions) this.started.delete(session.sessionId);
    this.sessions = [...this.started.values(), ...sessions];
    this.render();
  }

  has(sessionId) {
    return this.sessions.some((session) => session.sessionId === sessionId);
  }

  // A session a turn just started: at the top of the list until the list is loaded again.
  remember(sessionId) {
    if (!this.has(sessionId)) {
      const session = { sessionId, title: "", status: "active", createDate: new Date().toISOString() };
      this.started.set(sessionId, session);
      this.sessions.unshift(session);
    }
    this.render();
  }

  setTitle(sessionId, title) {
    const session = this.sessions.find((item) => item.sessionId === sessionId);
    if (session) {
      session.title = title;
      this.render();
    }
    if (sessionId === this.current()) document.title = `${title} · ${this.appTitle}`;
  }

  // The document's title while `sessionId` (or a new chat, null) is shown.
  pageTitle(sessionId) {
    const title = this.sessions.find((item) => item.sessionId === sessionId)?.title;
    return title ? `${title} · ${this.appTitle}` : this.appTitle;
  }

  render() {
    // An open menu, and the focus anywhere in the list, stay as they were when the list is drawn
    // again (as a title arrives): a key pressed on the old line lands on the new one.
    const openId = this.list.querySelector(".session-menu[open]")?.closest(".session")?.dataset.sessionId;
    const active = this.list.contains(document.activeElement) ? document.activeElement : null;
    const focusedId = active?.closest(".session")?.dataset.sessionId;
    const focusable = (item) => [...item.querySelectorAll("a, summary, button")];
    const focusedAt = focusedId ? focusable(this.itemOf(focusedId)).indexOf(active) : -1;
    // A line being renamed or asking to confirm a deletion is kept as it is.
    const editing = new Map([...this.list.querySelectorAll(".session[data-editing]")].map((item) => [item.dataset.sessionId, item]));
    this.list.replaceChildren(...this.sessions.map((session) => editing.get(session.sessionId) ?? this.item(session)));
    this.empty.hidden = this.sessions.length > 0;
    const menu = openId ? this.itemOf(openId)?.querySelector(".session-menu") : null;
    if (menu) menu.open = true;
    const again = focusedId ? this.itemOf(focusedId) : null;
    if (active?.isConnected) active.focus();
    else if (again && focusedAt >= 0) focusable(again)[focusedAt]?.focus();
  }

  item(session) {
    const current = session.sessionId === this.current();
    const link = el(
      "a",
      {
        href: this.href(session.sessionId),
        "aria-current": current ? "page" : null,
        onclick: (event) => this.clicked(event, session.sessionId),
      },
      el("span", { class: "session-title", text: label(session) }),
      el("span", { class: "session-meta", text: meta(session) }),
    );
    // One menu (⋯) per conversation: the title keeps the line's width (docs/api.md, "Pins", "Share links").
    const menu = el("details", { class: "session-menu" });
    const choice = (className, text, ariaLabel, action) =>
      el("button", {
        type: "button",
        class: `button button-small button-link ${className}`,
        "aria-label": ariaLabel,
        text,
        onclick: () => {
          menu.open = false;
          action();
        },
      });
    menu.append(
      el("summary", { class: "button button-small button-link", "aria-label": `More for “${label(session)}”`, text: "⋯" }),
      el(
        "div",
        { class: "session-menu-items" },
        choice("rename", "Rename", `Rename “${label(session)}”`, () => this.rename(session)),
        choice("pin", session.pinned ? "Unpin" : "Pin", null, () => this.pin(session, !session.pinned)),
        choice("share", "Share", null, () => this.share(session)),
        choice("delete", "Delete", `Delete “${label(session)}”`, () => this.confirmDelete(session)),
      ),
    );
    menu.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && menu.open) {
        event.stopPropagation(); // the drawer stays open: only the menu closes
        menu.open = false;
        menu.querySelector("summary").focus();
      }
    });
    const item = el("li", { class: "session", "data-session-id": session.sessionId }, link, menu);
    if (session.pinned) item.dataset.pinned = "true";
    return item;
  }

  // Pinned conversations head the list (docs/api.md, "Pins"): the list is read again in the server's order.
  async pin(session, pinned) {
    try {
      await this.api.pin(session.sessionId, pinned);
      await this.load();
      this.notices.say(`${pinned ? "Pinned" : "Unpinned"} “${label(session)}”.`);
    } catch (error) {
      this.notices.showError(error);
    }
  }

  // A read-only copy of the conversation as it is now, at a link anyone signed in may open (docs/api.md, "Share links").
  async share(session) {
    let url;
    try {
      url = (await this.api.share(session.sessionId)).url;
    } catch (error) {
      this.notices.showError(error);
      return;
    }
    const copied = await navigator.clipboard?.writeText(url).then(
      () => true,
      () => false,
    );
    this.notices.say(copied ? `Share link copied: ${url}` : `Share link: ${url}`);
  }

  // The session's line asks first; Delete removes it for good, Cancel or Escape puts the line back.
  confirmDelete(session) {
    const item = this.itemOf(session.sessionId);
    if (!item) return;
    const done = () => {
      delete item.dataset.editing;
      this.render();
      this.itemOf(session.sessionId)?.querySelector(".session-menu summary")?.focus();
    };
    const remove = async () => {
      try {
        await this.api.deleteSession(session.sessionId);
      } catch (error) {
        done();
        this.notices.showError(error);
        return;
      }
      this.sessions = this.sessions.filter((item) => item.sessionId !== session.sessionId);
      this.started.delete(session.sessionId);
      this.render();
      if (session.sessionId === this.current()) this.newChat();
      this.notices.say(`Deleted “${label(session)}”.`);
    };
    const cancel = el("button", { type: "button", class: "button button-small", text: "Cancel", onclick: done });
    const confirm = el(
      "div",
      { class: "session-confirm", role: "group", "aria-label": "Confirm deletion" },
      el("span", { text: `Delete “${label(session)}” and its files? This cannot be undone.` }),
      el("button", { type: "button", class: "button button-small button-danger", text: "Delete", onclick: remove }),
      cancel,
    );
    confirm.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        done();
      }
    });
    item.dataset.editing = "true";
    item.replaceChildren(confirm);
    cancel.focus();
  }

  clicked(event, sessionId) {
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || event.button !== 0) return; // a new tab
    event.preventDefault();
    this.closeDrawer();
    this.open(sessionId);
  }

  itemOf(sessionId) {
    return this.list.querySelector(`[data-session-id="${CSS.escape(sessionId)}"]`);
  }

  // The session's line becomes a small form; Escape or Cancel puts the line back.
  rename(session) {
    const item = this.itemOf(session.sessionId);
    if (!item) return;
    const input = el("input", { type: "text", value: session.title || "", "aria-label": "New title", maxlength: "200" });
    const done = () => {
      delete item.dataset.editing;
      this.render();
      this.itemOf(session.sessionId)?.querySelector(".session-menu summary")?.focus();
    };
    const save = async (event) => {
      event.preventDefault();
      const title = input.value.trim();
      if (title) {
        try {
          const answer = await this.api.rename(session.sessionId, title);
          // The list may have been read again meanwhile: the line drawn next is of this.sessions.
          for (const stored of this.sessions) if (stored.sessionId === session.sessionId) stored.title = answer.title;
          if (session.sessionId === this.current()) document.title = `${answer.title} · ${this.appTitle}`;
          this.notices.say(`Renamed to “${answer.title}”.`);
        } catch (error) {
          this.notices.showError(error);
        }
      }
      done();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        event.preventDefault();
        done();
      }
    });
    item.dataset.editing = "true";
    item.replaceChildren(
      el(
        "form",
        { class: "session-rename", onsubmit: save },
        input,
        el("button", { type: "submit", class: "button button-small button-primary", text: "Save" }),
        el("button", { type: "button", class: "button button-small", text: "Cancel", onclick: done }),
      ),
    );
    input.focus();
    input.select();
  }

  setDrawer(open) {
    this.sidebar.dataset.open = open ? "true" : "false";
    this.toggle.setAttribute("aria-expanded", open ? "true" : "false");
  }

  closeDrawer() {
    if (this.sidebar.dataset.open === "true") this.setDrawer(false);
  }
}

function label(session) {
  return session.title || "New conversation";
}

function meta(session) {
  const when = new Date(session.createDate || Date.now());
  const date = when.toLocaleDateString(undefined, { month: "short", day: "numeric" });
  const state = session.status === "completed" ? `${date} · completed` : date;
  return session.pinned ? `Pinned · ${state}` : state;
}
