// The hero (docs/widgets.md, "window.chatRuntime" and "Events"): one widget below the spotlight,
// shown and hidden by code only; the person can only collapse and expand it. It stays mounted
// while hidden, so it can refresh on heroDidShow and stop its work on heroDidHide.

import { el } from "chat/dom";
import { collapseButton } from "chat/widgets/chrome";

const DEFAULTS = { autoCreateInstance: false, startCollapsed: false };
const SIZING_DEFAULTS = { minWidth: "200px", maxWidth: "90%", minHeight: 100, maxHeight: 600 };

// Hero sizing: width/height are CSS lengths (absent: the content's size); minWidth and maxWidth
// CSS lengths, minHeight and maxHeight pixels. The browser clamps a set size to min/max.
function heroSizing(sizing) {
  const given = sizing && typeof sizing === "object" ? sizing : {};
  const length = (value, fallback) =>
    typeof value === "number" ? `${value}px` : typeof value === "string" && value.trim() ? value.trim() : fallback;
  const pixels = (value, fallback) => {
    const parsed = typeof value === "string" ? parseFloat(value) : value;
    return `${Number.isFinite(parsed) ? parsed : fallback}px`;
  };
  return {
    width: length(given.width, null),
    height: length(given.height, null),
    minWidth: length(given.minWidth, SIZING_DEFAULTS.minWidth),
    maxWidth: length(given.maxWidth, SIZING_DEFAULTS.maxWidth),
    minHeight: pixels(given.minHeight, SIZING_DEFAULTS.minHeight),
    maxHeight: pixels(given.maxHeight, SIZING_DEFAULTS.maxHeight),
  };
}

export class Hero {
  constructor({ definitions, instances, events }) {
    this.definitions = definitions;
    this.instances = instances;
    this.events = events;
    this.element = el("section", { class: "hero", "aria-label": "Hero", hidden: true });
    this.instance = null;
    this.tagId = null;
    this.visible = false;
    this.collapsed = false;
    this.collapseButton = null;
    this.unwatch = null;
    this.onPersonToggle = null; // chat/widgets/room: told when the person, not code, collapses or expands it
  }

  // The chat app's hero widget is created at load when its definition asks to be.
  start() {
    const tagId = this.definitions.tagIds().find((id) => this.options(id)?.autoCreateInstance);
    if (tagId && !this.instance) this.render(tagId, null, null);
  }

  options(tagId) {
    const options = this.definitions.get(tagId)?.renderingContexts?.hero;
    return options?.enabled ? { ...DEFAULTS, ...options } : null;
  }

  // chatRuntime.renderTag(…, "hero"): mounted, then shown.
  render(tagId, data, metadata) {
    const instanceId = this.mount(tagId, data, metadata);
    this.show();
    return instanceId;
  }

  show() {
    if (!this.instance) {
      // No instance yet: the chat app's hero widget is created on demand (autoCreateInstance false).
      const tagId = this.definitions.tagIds().find((id) => this.options(id));
      if (!tagId) return false;
      this.mount(tagId, null, null);
    }
    if (this.visible) return false;
    this.events.emit("heroWillShow", {});
    this.visible = true;
    this.apply();
    this.events.emit("heroDidShow", {});
    return true;
  }

  hide() {
    if (!this.instance || !this.visible) return false;
    this.events.emit("heroWillHide", {});
    this.visible = false;
    this.apply();
    this.events.emit("heroDidHide", {});
    return true;
  }

  setCollapsed(collapsed) {
    if (!this.instance || this.collapsed === collapsed) return false;
    this.collapsed = collapsed;
    this.apply();
    this.events.emit(collapsed ? "heroCollapse" : "heroExpand", {});
    return true;
  }

  toggleCollapsed() {
    return this.setCollapsed(!this.collapsed);
  }

  close() {
    if (!this.instance) return false;
    this.destroy();
    return true;
  }

  mount(tagId, data, metadata) {
    const options = this.options(tagId);
    if (!options) throw new Error(`${tagId} does not render in hero`);
    // Singleton: a new hero replaces the old one where it is (visible stays visible, no events).
    const wasVisible = this.visible;
    if (this.instance) this.destroy();
    const sizing = heroSizing(options.sizing);
    const frame = el("div", { class: "hero-frame" });
    // Width bounds apply to the whole hero (centered); height bounds to the widget's area, under
    // its header bar. A set size is clamped by the browser (min/max win over width/height).
    if (sizing.width) frame.style.setProperty("width", sizing.width);
    frame.style.setProperty("min-width", sizing.minWidth);
    frame.style.setProperty("max-width", sizing.maxWidth);
    if (sizing.height) frame.style.setProperty("--hero-height", sizing.height);
    frame.style.setProperty("--hero-min-height", sizing.minHeight);
    frame.style.setProperty("--hero-max-height", sizing.maxHeight);
    this.element.replaceChildren(frame);
    this.tagId = tagId;
    this.collapsed = !!options.startCollapsed;
    this.visible = wasVisible;
    const definition = this.definitions.get(tagId);
    this.instance = this.instances.mount({
      tagId,
      renderingContext: "hero",
      definition,
      data: data ?? null,
      host: frame,
      metadata: { title: definition.description || tagId, ...(metadata || {}) },
    });
    this.collapseButton = collapseButton(() => {
      this.toggleCollapsed();
      this.onPersonToggle?.();
    });
    this.instance.addTools(this.collapseButton);
    this.unwatch = this.instance.watch(() => this.label());
    this.apply();
    return this.instance.instanceId;
  }

  destroy() {
    const instance = this.instance;
    this.unwatch();
    Object.assign(this, { instance: null, visible: false, collapsed: false, tagId: null, collapseButton: null, unwatch: null });
    instance.destroy();
    this.element.replaceChildren();
    this.apply();
  }

  apply() {
    // Focus inside what is about to disappear goes to what stays: the bar, else the message box.
    if (!this.visible && this.element.contains(document.activeElement)) document.getElementById("prompt")?.focus();
    this.element.hidden = !this.visible;
    this.element.dataset.collapsed = String(this.collapsed);
    if (!this.instance) return;
    this.collapseButton.setAttribute("aria-expanded", String(!this.collapsed));
    // Collapsed: the header bar only; the widget stays connected (a hidden body, not a removed one).
    const body = this.instance.body;
    if (this.collapsed && body.contains(document.activeElement)) this.collapseButton.focus();
    body.hidden = this.collapsed;
    this.label();
  }

  label() {
    if (!this.instance) return;
    const title = this.instance.metadata?.title || this.definitions.get(this.tagId)?.description || this.tagId || "Hero";
    this.element.setAttribute("aria-label", title);
    this.collapseButton.setAttribute("aria-label", `${this.collapsed ? "Expand" : "Collapse"} ${title}`);
    this.collapseButton.title = this.collapseButton.getAttribute("aria-label");
  }
}
