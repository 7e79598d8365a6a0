// The canvas (a resizable panel at the right of the conversation, SPEC.md CanvasWidgetOptions),
// the dialog (a modal with the widget's actions as buttons, the primary ones in the footer), and
// the page's own confirmation dialog (CONTRACT §13: never the browser's native confirm).

import { actionButton } from "./chrome.js";

const MIN_WIDTH = 280;

function node(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text !== undefined) element.textContent = text;
  return element;
}

// A modal question with two buttons; resolves true (confirm) or false (cancel, Escape).
export function confirmDialog({ title, message, confirmLabel = "Close", cancelLabel = "Cancel" }) {
  return new Promise((resolve) => {
    const dialog = node("dialog", "widget-confirm");
    dialog.setAttribute("aria-labelledby", "widget-confirm-title");
    const heading = node("h2", "widget-confirm-title", title || "Close this panel?");
    heading.id = "widget-confirm-title";
    const text = node("p", "widget-confirm-message", message || "");
    text.hidden = !message;
    const row = node("div", "widget-dialog-footer");
    const cancel = node("button", "button", cancelLabel);
    cancel.type = "button";
    cancel.value = "cancel";
    const confirm = node("button", "button button-primary", confirmLabel);
    confirm.type = "button";
    confirm.value = "confirm";
    row.append(cancel, confirm);
    dialog.append(heading, text, row);
    let answer = false;
    cancel.addEventListener("click", () => dialog.close());
    confirm.addEventListener("click", () => {
      answer = true;
      dialog.close();
    });
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve(answer);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

export class Canvas {
  constructor({ emit, mountWidget, host }) {
    this.emit = emit;
    this.mountWidget = mountWidget;
    this.host = host;
    this.runtime = null;
    this.current = null; // {instanceId, tagId, options, mounted, panel}
    this.companion = false;
    this.minimized = false;
    this.asking = null; // the pending confirmation, so two close requests share one dialog
    this.width = null;
  }

  layout() {
    return document.querySelector(".layout") || document.body;
  }

  open({ tagId, data, options, metadata, definition }) {
    if (this.current) this.close();
    const panel = node("aside", "canvas-panel");
    panel.setAttribute("aria-label", metadata?.title || tagId);
    if (this.width) panel.style.width = `${this.width}px`;
    const resizer = node("div", "canvas-resizer");
    resizer.setAttribute("role", "separator");
    resizer.setAttribute("aria-orientation", "vertical");
    resizer.setAttribute("aria-label", "Resize the panel");
    resizer.tabIndex = 0;
    panel.append(resizer);
    this.layout().append(panel);
    const mounted = this.mountWidget({ tagId, renderingContext: "canvas", data, attributes: {}, host: panel, metadata, definition });
    const instance = this.runtime.instances.get(mounted.instanceId);
    const chrome = instance.chrome;
    if (options.fullControl) {
      panel.dataset.fullControl = "true";
    } else {
      chrome.always = true;
      const close = node("button", "button button-small canvas-close", "Close");
      close.type = "button";
      close.setAttribute("aria-label", "Close the panel");
      close.addEventListener("click", () => this.requestClose());
      chrome.tools.append(close);
      if (!chrome.metadata?.title) chrome.title.textContent = tagId;
      chrome.refreshVisibility();
    }
    const stopResize = this.resizable(panel, resizer);
    this.current = { tagId, instanceId: mounted.instanceId, options, mounted, panel, stopResize };
    document.body.dataset.canvasOpen = "true";
    this.emit("canvasOpen", { tagId, instanceId: mounted.instanceId });
    if (options.companionMode) this.enterCompanion(!!options.chatPaneMinimized);
    return mounted.instanceId;
  }

  resizable(panel, resizer) {
    let startX = 0;
    let startWidth = 0;
    const move = (event) => this.setWidth(panel, startWidth + (startX - event.clientX));
    const up = () => {
      resizer.removeEventListener("pointermove", move);
      resizer.removeEventListener("pointerup", up);
      panel.classList.remove("canvas-resizing");
    };
    const down = (event) => {
      startX = event.clientX;
      startWidth = panel.getBoundingClientRect().width;
      resizer.setPointerCapture(event.pointerId);
      resizer.addEventListener("pointermove", move);
      resizer.addEventListener("pointerup", up);
      panel.classList.add("canvas-resizing");
    };
    const key = (event) => {
      const step = event.shiftKey ? 64 : 16;
      if (event.key === "ArrowLeft") this.setWidth(panel, panel.getBoundingClientRect().width + step);
      else if (event.key === "ArrowRight") this.setWidth(panel, panel.getBoundingClientRect().width - step);
      else return;
      event.preventDefault();
    };
    resizer.addEventListener("pointerdown", down);
    resizer.addEventListener("keydown", key);
    return () => {
      up();
      resizer.removeEventListener("pointerdown", down);
      resizer.removeEventListener("keydown", key);
    };
  }

  setWidth(panel, width) {
    const max = Math.max(MIN_WIDTH, window.innerWidth - 40);
    this.width = Math.round(Math.min(max, Math.max(MIN_WIDTH, width)));
    panel.style.width = `${this.width}px`;
  }

  enterCompanion(minimized) {
    if (!this.companion) {
      this.companion = true;
      document.body.dataset.companion = "true";
      this.stripButton();
      this.emit("companionModeEnter", {});
    }
    if (minimized) this.minimizeChatPane();
  }

  exitCompanion() {
    if (!this.companion) return;
    if (this.minimized) this.expandChatPane();
    this.companion = false;
    delete document.body.dataset.companion;
    document.querySelector(".chat-pane-toggle")?.remove();
    this.emit("companionModeExit", {});
  }

  // In companion mode the chat pane has a button to shrink it to a strip and back.
  stripButton() {
    const conversation = document.querySelector(".conversation");
    if (!conversation || conversation.querySelector(".chat-pane-toggle")) return;
    const toggle = node("button", "button button-small chat-pane-toggle", "Minimise chat");
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", "true");
    toggle.addEventListener("click", () => (this.minimized ? this.expandChatPane() : this.minimizeChatPane()));
    conversation.prepend(toggle);
  }

  minimizeChatPane() {
    if (!this.companion || this.minimized) return;
    this.minimized = true;
    document.body.dataset.chatPaneMinimized = "true";
    const toggle = document.querySelector(".chat-pane-toggle");
    if (toggle) {
      toggle.textContent = "Chat";
      toggle.setAttribute("aria-label", "Expand the chat");
      toggle.setAttribute("aria-expanded", "false");
    }
    this.emit("chatPaneMinimized", {});
  }

  expandChatPane() {
    if (!this.minimized) return;
    this.minimized = false;
    delete document.body.dataset.chatPaneMinimized;
    const toggle = document.querySelector(".chat-pane-toggle");
    if (toggle) {
      toggle.textContent = "Minimise chat";
      toggle.removeAttribute("aria-label");
      toggle.setAttribute("aria-expanded", "true");
    }
    this.emit("chatPaneExpanded", {});
  }

  // SPEC.md requestCanvasClose: true when the canvas closes (or none is open), false on cancel.
  requestClose() {
    if (!this.current) return Promise.resolve(true);
    if (this.asking) return this.asking;
    const config = this.current.options.closeConfig || {};
    if (!config.confirmOnClose) {
      this.close();
      return Promise.resolve(true);
    }
    const which = this.current;
    this.asking = confirmDialog({
      title: config.confirmTitle || "Close this panel?",
      message: config.confirmMessage || "",
      confirmLabel: config.confirmButtonLabel || "Close",
      cancelLabel: config.cancelButtonLabel || "Cancel",
    }).then((confirmed) => {
      this.asking = null;
      if (confirmed && this.current === which) this.close();
      return confirmed;
    });
    return this.asking;
  }

  close() {
    const current = this.current;
    if (!current) return;
    this.current = null;
    current.stopResize();
    this.exitCompanion();
    current.mounted.destroy();
    current.panel.remove();
    delete document.body.dataset.canvasOpen;
    this.emit("canvasClose", { tagId: current.tagId, instanceId: current.instanceId });
  }
}

// A widget in a modal dialog; its actions are buttons, the primary ones in the footer, and a
// Close button ends it. Returns the instance id.
export function openDialog({ runtime, tagId, data, metadata, definition }) {
  const dialog = node("dialog", "widget-dialog");
  const header = node("div", "widget-dialog-header");
  const heading = node("h2", "widget-dialog-title", metadata?.title || tagId);
  heading.id = `widget-dialog-title-${Math.random().toString(36).slice(2)}`;
  dialog.setAttribute("aria-labelledby", heading.id);
  const close = node("button", "button button-small widget-dialog-close", "Close");
  close.type = "button";
  header.append(heading, close);
  const content = node("div", "widget-dialog-content");
  const secondary = node("div", "widget-dialog-actions");
  const footer = node("div", "widget-dialog-footer");
  dialog.append(header, content, secondary, footer);
  document.body.append(dialog);
  const mounted = runtime.mountWidget({ tagId, renderingContext: "dialog", data, attributes: {}, host: content, metadata, definition });
  const instance = runtime.instances.get(mounted.instanceId);
  const paint = (meta) => {
    heading.textContent = meta.title || tagId;
    const actions = meta.actions || [];
    secondary.replaceChildren(...actions.filter((action) => !action.primary).map((action) => actionButton(action, { text: true })));
    footer.replaceChildren(...actions.filter((action) => action.primary).map((action) => actionButton(action, { text: true })));
  };
  instance.onMetadata.add(paint);
  if (instance.metadata) paint(instance.metadata);
  const clicked = (event) => {
    const button = event.target.closest(".widget-action");
    if (!button) return;
    const action = (instance.metadata?.actions || []).find((item) => item.id === button.dataset.actionId);
    if (action) runtime.runAction(instance, action);
  };
  secondary.addEventListener("click", clicked);
  footer.addEventListener("click", clicked);
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    mounted.destroy();
    dialog.remove();
  });
  dialog.showModal();
  return mounted.instanceId;
}
