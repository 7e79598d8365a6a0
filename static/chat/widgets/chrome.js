// A widget's chrome: the bar above it with its title, icon, loading status and actions
// (docs/widgets.md, "window.chatRuntime": getWidgetMetadataAPI). Everything a widget gives here is
// data: the title is text, an `iconSvg` goes through DOMPurify's SVG profile, a `lucideIconName` is
// built from the vendored icon nodes with createElementNS.

import { el, icon } from "chat/dom";
import DOMPurify from "dompurify";

const SVG = "http://www.w3.org/2000/svg";
let iconNodes = null; // Promise of {name: [[element, attributes], ...]}, loaded on first use

function lucideNodes() {
  if (!iconNodes) {
    iconNodes = fetch(import.meta.resolve("vendor/lucide-icons"), { credentials: "same-origin" })
      .then((response) => (response.ok ? response.json() : {}))
      .catch(() => ({}));
  }
  return iconNodes;
}

// The SVG element of a lucide icon by its kebab-case name, or null when there is no such icon.
export async function lucideIcon(name) {
  const nodes = (await lucideNodes())[name];
  if (!Array.isArray(nodes)) return null;
  const svg = document.createElementNS(SVG, "svg");
  const base = {
    xmlns: SVG,
    width: 18,
    height: 18,
    viewBox: "0 0 24 24",
    fill: "none",
    stroke: "currentColor",
    "stroke-width": 2,
    "stroke-linecap": "round",
    "stroke-linejoin": "round",
    "aria-hidden": "true",
  };
  for (const [key, value] of Object.entries(base)) if (key !== "xmlns") svg.setAttribute(key, value);
  svg.classList.add("lucide", `lucide-${name}`);
  for (const [tag, attributes] of nodes) {
    const child = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes || {})) child.setAttribute(key, value);
    svg.append(child);
  }
  return svg;
}

// An SVG given as a string by a widget: sanitized, never run.
export function safeSvg(text) {
  const fragment = DOMPurify.sanitize(String(text), { USE_PROFILES: { svg: true, svgFilters: true }, RETURN_DOM_FRAGMENT: true });
  const svg = fragment.querySelector("svg");
  if (svg) svg.setAttribute("aria-hidden", "true");
  return svg;
}

// A widget action's button: its icon, or its title when it has none (or `text`, in a dialog).
export function actionButton(action, { text = false } = {}) {
  const node = document.createElement("button");
  node.type = "button";
  node.className = `button button-small widget-action${action.primary ? " button-primary" : ""}`;
  node.dataset.actionId = action.id;
  node.title = action.title || action.id;
  node.setAttribute("aria-label", action.title || action.id);
  node.disabled = !!action.disabled;
  const icon = action.iconSvg ? safeSvg(action.iconSvg) : null;
  const drawn = icon && icon.childElementCount > 0; // an icon sanitized to nothing gives way to the title
  if (drawn) node.append(icon);
  if (text || !drawn) node.append(document.createTextNode(action.title || action.id));
  return node;
}

export const CHEVRON = "M6 9l6 6 6-6";

// The disclosure button of a spotlight card or the hero: its owner names it "Collapse …"/"Expand …"
// and sets aria-expanded.
export function collapseButton(onclick) {
  return el("button", { type: "button", class: "button button-small button-icon widget-collapse", onclick }, icon(CHEVRON));
}

export class Chrome {
  constructor({ renderingContext }) {
    this.renderingContext = renderingContext;
    this.element = document.createElement("div");
    this.element.className = "widget-chrome";
    this.element.hidden = true;
    this.icon = document.createElement("span");
    this.icon.className = "widget-icon";
    this.title = document.createElement("span");
    this.title.className = "widget-title";
    this.loading = document.createElement("span");
    this.loading.className = "widget-loading";
    this.loading.setAttribute("role", "status");
    this.loading.hidden = true;
    this.actions = document.createElement("span");
    this.actions.className = "widget-actions";
    this.tools = document.createElement("span"); // the surface's own buttons (close), after the actions
    this.tools.className = "widget-tools";
    this.element.append(this.icon, this.title, this.loading, this.actions, this.tools);
    this.onAction = null;
    this.showActions = renderingContext !== "dialog"; // a dialog shows its actions in its footer
    this.iconToken = 0;
    this.element.addEventListener("click", this.clicked);
  }

  clicked = (event) => {
    const node = event.target.closest(".widget-action");
    if (!node || !this.element.contains(node) || !this.metadata) return;
    const action = (this.metadata.actions || []).find((item) => item.id === node.dataset.actionId);
    if (action && this.onAction) this.onAction(action);
  };

  // Shown when there is something to show, or when a surface (canvas, dialog) always wants its bar.
  refreshVisibility() {
    const metadata = this.metadata || {};
    // A dialog has its own title bar and footer: its chrome only ever shows a loading status.
    if (this.renderingContext === "dialog") {
      this.element.hidden = !metadata.loadingStatus?.loading;
      return;
    }
    const something =
      metadata.title ||
      metadata.iconSvg ||
      metadata.lucideIconName ||
      metadata.loadingStatus?.loading ||
      (this.showActions && metadata.actions?.length);
    this.element.hidden = !(this.always || something);
  }

  set(metadata) {
    this.metadata = metadata;
    this.title.textContent = metadata.title || "";
    this.element.style.setProperty("--widget-icon-color", metadata.iconColor || "currentColor");
    const token = ++this.iconToken;
    if (metadata.iconSvg) {
      this.icon.replaceChildren(...[safeSvg(metadata.iconSvg)].filter(Boolean));
    } else if (metadata.lucideIconName) {
      lucideIcon(metadata.lucideIconName).then((svg) => {
        if (token === this.iconToken) this.icon.replaceChildren(...[svg].filter(Boolean));
      });
    } else {
      this.icon.replaceChildren();
    }
    const status = metadata.loadingStatus || { loading: false };
    this.loading.hidden = !status.loading;
    this.loading.textContent = status.loading ? status.loadingMsg || "Loading…" : "";
    this.element.closest(".widget-frame")?.setAttribute("aria-busy", status.loading ? "true" : "false");
    this.actions.replaceChildren(...(this.showActions ? (metadata.actions || []).map((action) => actionButton(action)) : []));
    this.refreshVisibility();
  }

  destroy() {
    this.element.removeEventListener("click", this.clicked);
    this.onAction = null;
    this.metadata = null;
  }
}
