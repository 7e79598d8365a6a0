// The spotlight (docs/widgets.md, "window.chatRuntime"): a carousel of widgets above the message
// box, which the person pins, unpins and orders. What it offers, in which order, and the person's
// pinning are chat/widgets/spotlight-entries; here, the cards and the carousel.

import { el, icon } from "chat/dom";
import { CHEVRON, collapseButton } from "chat/widgets/chrome";
import { SpotlightEntries } from "chat/widgets/spotlight-entries";

// A moved card keeps its widget connected where the browser can (Element.moveBefore); elsewhere
// the widget sees a disconnect and a connect, as for any DOM move.
function moveBefore(parent, node, reference) {
  if (node.nextSibling === reference && node.parentNode === parent) return;
  if (typeof parent.moveBefore === "function" && node.isConnected && parent.isConnected) parent.moveBefore(node, reference);
  else parent.insertBefore(node, reference);
}

// A registration's `sizing` (the hero sizing's fields): only what it sets; the card's CSS gives
// the rest. Heights bound the widget's area under its bar, as in the hero.
function sizeCard(card, sizing) {
  if (!sizing || typeof sizing !== "object") return;
  const length = (value) => (typeof value === "number" ? `${value}px` : typeof value === "string" && value.trim() ? value.trim() : null);
  const set = (property, value) => value && card.style.setProperty(property, value);
  set("width", length(sizing.width));
  set("min-width", length(sizing.minWidth));
  set("max-width", length(sizing.maxWidth));
  set("--card-height", length(sizing.height));
  set("--card-min-height", length(sizing.minHeight));
  set("--card-max-height", length(sizing.maxHeight));
}

export class Spotlight {
  // `save(partialPrefs)`: stores the person's prefs (chat/api).
  constructor({ definitions, instances, events, save }) {
    this.definitions = definitions;
    this.instances = instances;
    this.events = events;
    this.save = save;
    this.entries = new SpotlightEntries(definitions);
    this.started = false; // nothing shows before the person's prefs are in: no card their unpinning would remove
    this.visible = true;
    this.onPersonToggle = null; // chat/widgets/room: told when the person, not code, shows or hides the cards
    this.build();
    this.render();
  }

  build() {
    this.toggleButton = el(
      "button",
      {
        type: "button",
        class: "button button-small spotlight-toggle",
        "aria-expanded": "true",
        "aria-controls": "spotlight-track",
        onclick: () => {
          this.setVisible(!this.visible);
          this.onPersonToggle?.();
        },
      },
      icon(CHEVRON),
      el("span", { text: "Spotlight" }),
    );
    this.menuButton = el("button", {
      type: "button",
      class: "button button-small spotlight-menu-button",
      "aria-expanded": "false",
      "aria-controls": "spotlight-menu",
      text: "More widgets",
      onclick: () => this.setMenuOpen(this.menu.hidden),
    });
    this.menu = el("ul", { id: "spotlight-menu", class: "spotlight-menu", "aria-label": "Unpinned widgets", hidden: true });
    const scroller = (label, text, direction) =>
      el("button", {
        type: "button",
        class: "button button-small spotlight-scroll",
        "aria-label": label,
        text,
        onclick: () => this.scroll(direction),
      });
    this.previous = scroller("Previous widgets", "‹", -1);
    this.next = scroller("Next widgets", "›", 1);
    this.track = el("ul", { id: "spotlight-track", class: "spotlight-track", "aria-label": "Spotlight widgets" });
    this.element = el(
      "section",
      { class: "spotlight", "aria-label": "Spotlight", "data-visible": "true" },
      el(
        "div",
        { class: "spotlight-header" },
        this.toggleButton,
        el("span", { class: "spotlight-menu-wrap" }, this.menuButton, this.menu),
        el("span", { class: "spotlight-scrolls" }, this.previous, this.next),
      ),
      this.track,
    );
    this.menu.addEventListener("keydown", (event) => {
      if (event.key === "Escape") {
        this.setMenuOpen(false);
        this.menuButton.focus();
      }
    });
    document.addEventListener("click", (event) => {
      if (!this.menu.hidden && !event.target.closest(".spotlight-menu-wrap")) this.setMenuOpen(false);
    });
    this.track.addEventListener("scroll", () => this.refreshScrollButtons(), { passive: true });
    new ResizeObserver(() => this.refreshScrollButtons()).observe(this.track);
  }

  // The person's pinning and order, as the page was served with their prefs: the cards they want.
  start(prefs) {
    this.entries.load(prefs);
    this.started = true;
    for (const entry of this.entries.ordered()) if (entry.cards.length === 0 && this.entries.wanted(entry)) this.mountCard(entry);
    this.render();
  }

  // --- cards ------------------------------------------------------------------------------------

  mountCard(entry, data = null, metadata = null) {
    const element = el("li", { class: "spotlight-card", "data-tag-id": entry.tagId });
    sizeCard(element, entry.sizing);
    const instance = this.instances.mount({
      tagId: entry.tagId,
      renderingContext: "spotlight",
      definition: entry.definition,
      data,
      host: element,
      metadata: { ...entry.metadata, ...(metadata || {}) },
    });
    const card = { element, instance, collapsed: !!entry.options.startCollapsed };
    element.dataset.instanceId = instance.instanceId;
    // By tag id: a registration replaces the entry object, the card stays.
    const current = () => this.entries.get(entry.tagId);
    const small = (text, onclick) => el("button", { type: "button", class: "button button-small button-icon", text, onclick });
    card.buttons = {
      collapse: collapseButton(() => this.setCollapsed(card, !card.collapsed)),
      earlier: small("←", () => this.move(current(), -1)),
      later: small("→", () => this.move(current(), 1)),
      unpin: small("×", () => this.unpin(current())),
    };
    instance.addTools(...Object.values(card.buttons));
    card.unwatch = instance.watch(() => this.label(card));
    entry.cards.push(card);
    this.setCollapsed(card, card.collapsed, { quiet: true });
    return card;
  }

  label(card) {
    const title = card.instance.metadata?.title || this.entries.get(card.element.dataset.tagId)?.metadata.title || card.instance.instanceId;
    card.element.setAttribute("aria-label", title);
    const { collapse, earlier, later, unpin } = card.buttons;
    collapse.setAttribute("aria-label", `${card.collapsed ? "Expand" : "Collapse"} ${title}`);
    earlier.setAttribute("aria-label", `Move ${title} earlier`);
    later.setAttribute("aria-label", `Move ${title} later`);
    unpin.setAttribute("aria-label", `Unpin ${title}`);
    for (const button of [collapse, earlier, later, unpin]) button.title = button.getAttribute("aria-label");
  }

  // Collapsed shows the widget's bar only; the widget stays mounted.
  setCollapsed(card, collapsed, { quiet = false } = {}) {
    card.collapsed = collapsed;
    card.element.dataset.collapsed = String(collapsed);
    card.buttons.collapse.setAttribute("aria-expanded", String(!collapsed));
    const body = card.instance.body;
    if (collapsed && body.contains(document.activeElement)) card.buttons.collapse.focus();
    body.hidden = collapsed;
    this.label(card);
    if (!quiet) this.refreshScrollButtons();
  }

  dropCard(entry, card) {
    card.unwatch();
    card.instance.destroy();
    card.element.remove();
    const index = entry.cards.indexOf(card);
    if (index >= 0) entry.cards.splice(index, 1); // in place: the array is shared across entry refreshes
  }

  // --- the carousel -----------------------------------------------------------------------------

  render() {
    const list = this.entries.ordered();
    let reference = this.track.firstChild;
    const shown = [];
    for (const entry of list) {
      for (const card of entry.cards) {
        if (card.element.parentNode !== this.track) this.track.insertBefore(card.element, reference);
        else moveBefore(this.track, card.element, reference);
        reference = card.element.nextSibling;
        shown.push(card);
      }
    }
    shown.forEach((card, index) => {
      card.buttons.earlier.disabled = index === 0;
      card.buttons.later.disabled = index === shown.length - 1;
    });
    const offered = list.filter((entry) => entry.cards.length === 0 && entry.options.showInUnpinnedMenu !== false);
    this.menu.replaceChildren(
      ...offered.map((entry) =>
        el(
          "li",
          {},
          el("button", {
            type: "button",
            class: "button button-small button-wide",
            "data-tag-id": entry.tagId,
            text: `Pin ${entry.metadata.title}`,
            onclick: () => this.pin(this.entries.get(entry.tagId)),
          }),
        ),
      ),
    );
    this.menuButton.hidden = offered.length === 0;
    if (this.menuButton.hidden) this.setMenuOpen(false);
    this.element.hidden = !this.started || (shown.length === 0 && offered.length === 0);
    this.element.dataset.count = String(shown.length);
    this.refreshScrollButtons();
  }

  setMenuOpen(open) {
    this.menu.hidden = !open;
    this.menuButton.setAttribute("aria-expanded", String(open));
    if (open) this.menu.querySelector("button")?.focus();
  }

  scroll(direction) {
    this.track.scrollBy({ left: direction * Math.max(this.track.clientWidth * 0.8, 200), behavior: "smooth" });
  }

  refreshScrollButtons() {
    const { track, previous, next } = this;
    const overflow = track.scrollWidth > track.clientWidth + 1;
    previous.hidden = next.hidden = !overflow || !this.visible;
    previous.disabled = track.scrollLeft <= 0;
    next.disabled = track.scrollLeft + track.clientWidth >= track.scrollWidth - 1;
  }

  // --- what the person and chatRuntime do ---------------------------------------------------------

  savePrefs() {
    return this.save(this.entries.prefs).catch((error) => console.error("chatRuntime: the spotlight's prefs were not saved", error));
  }

  move(entry, direction) {
    if (!this.entries.move(entry, direction)) return;
    this.render();
    entry.cards[0]?.buttons[direction < 0 ? "earlier" : "later"].focus();
    this.savePrefs();
  }

  unpin(entry) {
    for (const card of [...entry.cards]) this.dropCard(entry, card);
    this.entries.unpin(entry);
    this.render();
    (this.menuButton.hidden ? this.toggleButton : this.menuButton).focus();
    this.savePrefs();
  }

  pin(entry) {
    this.entries.pin(entry);
    const card = entry.cards[0] || this.mountCard(entry);
    this.setMenuOpen(false);
    this.render();
    card.buttons.collapse.focus();
    card.element.scrollIntoView({ block: "nearest", inline: "nearest" });
    this.savePrefs();
  }

  // chatRuntime.renderTag(…, "spotlight"): a singleton's new render replaces its card in place;
  // otherwise it adds one more.
  renderTag(tagId, data, metadata) {
    const entry = this.entries.get(tagId) || this.entries.refresh(tagId);
    if (!entry) throw new Error(`${tagId} does not render in spotlight`);
    const old = entry.options.singleton !== false ? entry.cards[0] : null;
    const card = this.mountCard(entry, data ?? null, metadata);
    if (old) {
      old.element.after(card.element);
      this.dropCard(entry, old);
    }
    this.render();
    return card.instance.instanceId;
  }

  setVisible(visible) {
    if (visible === this.visible) return false;
    if (!visible && this.track.contains(document.activeElement)) this.toggleButton.focus(); // focus is not lost with the cards
    this.visible = visible;
    this.element.dataset.visible = String(visible);
    this.track.hidden = !visible;
    this.toggleButton.setAttribute("aria-expanded", String(visible));
    this.refreshScrollButtons();
    this.events.emit(visible ? "spotlightShow" : "spotlightHide", {});
    return true;
  }

  // chatRuntime.manuallyRegisterSpotlightWidget: for this page load only.
  register(registration) {
    const entry = this.entries.register(registration);
    // A shown card takes the registration's title (the widget may set its own later).
    for (const card of entry.cards) card.instance.setMetadata({ title: entry.metadata.title });
    if (this.started && entry.cards.length === 0 && this.entries.wanted(entry)) this.mountCard(entry);
    this.render();
    return entry.tagId;
  }
}
