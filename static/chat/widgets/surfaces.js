// The canvas (a resizable panel at the right of the conversation, with the options of
// docs/widgets.md "window.chatRuntime": companion mode, a minimised chat pane, full control, a
// close confirmation), the dialog (a modal with the widget's actions as buttons, the primary ones
// in the footer), and the page's own confirmation dialog (never the browser's native confirm).

import { el } from "chat/dom";
import { actionButton } from "chat/widgets/chrome";

const MIN_WIDTH = 280;

// A modal question with two buttons; resolves true (confirm) or false (cancel, Escape).
export function confirmDialog({ title, message, confirmLabel = "Close", cancelLabel = "Cancel" }) {
  return new Promise((resolve) => {
    let answer = false;
    const cancel = el("button", { type: "button", class: "button", value: "cancel", text: cancelLabel, onclick: () => dialog.close() });
    const confirm = el("button", {
      type: "button",
      class: "button button-primary",
      value: "confirm",
      text: confirmLabel,
      onclick: () => {
        answer = true;
        dialog.close();
      },
    });
    const dialog = el(
      "dialog",
      {
        class: "widget-confirm",
        "aria-labelledby": "widget-confirm-title",
        onclose: () => {
          dialog.remove();
          resolve(answer);
        },
      },
      el("h2", { class: "widget-confirm-title", id: "widget-confirm-title", text: title || "Close this panel?" }),
      el("p", { class: "widget-confirm-message", text: message || "", hidden: !message }),
      el("div", { class: "widget-dialog-footer" }, cancel, confirm),
    );
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

export class Canvas {
  constructor({ events, instances }) {
    this.events = events;
    this.instances = instances;
    this.current = null; // {tagId, options, instance, panel, stopResize}
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
    const resizer = el("div", {
      class: "canvas-resizer",
      role: "separator",
      "aria-orientation": "vertical",
      "aria-label": "Resize the panel",
      tabindex: "0",
    });
    const panel = el("aside", { class: "canvas-panel", "aria-label": metadata?.title || tagId }, resizer);
    if (this.width) panel.style.width = `${this.width}px`;
    this.layout().append(panel);
    const instance = this.instances.mount({ tagId, renderingContext: "canvas", data, host: panel, metadata, definition });
    if (options.fullControl) {
      panel.dataset.fullControl = "true";
    } else {
      const close = el("button", {
        type: "button",
        class: "button button-small canvas-close",
        "aria-label": "Close the panel",
        text: "Close",
        onclick: () => this.requestClose(),
      });
      if (!instance.chrome.metadata?.title) instance.chrome.title.textContent = tagId;
      instance.addTools(close);
    }
    const stopResize = this.resizable(panel, resizer);
    this.current = { tagId, options, instance, panel, stopResize };
    document.body.dataset.canvasOpen = "true";
    this.events.emit("canvasOpen", { tagId, instanceId: instance.instanceId });
    if (options.companionMode) this.enterCompanion(!!options.chatPaneMinimized);
    return instance.instanceId;
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
      this.events.emit("companionModeEnter", {});
    }
    if (minimized) this.minimizeChatPane();
  }

  exitCompanion() {
    if (!this.companion) return;
    if (this.minimized) this.expandChatPane();
    this.companion = false;
    delete document.body.dataset.companion;
    document.querySelector(".chat-pane-toggle")?.remove();
    this.events.emit("companionModeExit", {});
  }

  // In companion mode the chat pane has a button to shrink it to a strip and back.
  stripButton() {
    const conversation = document.querySelector(".conversation");
    if (!conversation || conversation.querySelector(".chat-pane-toggle")) return;
    const toggle = el("button", {
      type: "button",
      class: "button button-small chat-pane-toggle",
      "aria-expanded": "true",
      text: "Minimise chat",
      onclick: () => (this.minimized ? this.expandChatPane() : this.minimizeChatPane()),
    });
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
    this.events.emit("chatPaneMinimized", {});
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
    this.events.emit("chatPaneExpanded", {});
  }

  // chatRuntime.requestCanvasClose: true when the canvas closes (or none is open), false on cancel.
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
    current.instance.destroy();
    current.panel.remove();
    delete document.body.dataset.canvasOpen;
    this.events.emit("canvasClose", { tagId: current.tagId, instanceId: current.instance.instanceId });
  }
}

// A widget in a modal dialog; its actions are buttons, the primary ones in the footer, and a
// Close button ends it. Returns the instance id.
export function openDialog({ instances, tagId, data, metadata, definition }) {
  const heading = el("h2", {
    class: "widget-dialog-title",
    id: `widget-dialog-title-${Math.random().toString(36).slice(2)}`,
    text: metadata?.title || tagId,
  });
  const close = el("button", { type: "button", class: "button button-small widget-dialog-close", text: "Close" });
  const content = el("div", { class: "widget-dialog-content" });
  const secondary = el("div", { class: "widget-dialog-actions" });
  const footer = el("div", { class: "widget-dialog-footer" });
  const dialog = el(
    "dialog",
    { class: "widget-dialog", "aria-labelledby": heading.id },
    el("div", { class: "widget-dialog-header" }, heading, close),
    content,
    secondary,
    footer,
  );
  document.body.append(dialog);
  const instance = instances.mount({ tagId, renderingContext: "dialog", data, host: content, metadata, definition });
  const paint = (meta) => {
    heading.textContent = meta.title || tagId;
    const actions = meta.actions || [];
    secondary.replaceChildren(...actions.filter((action) => !action.primary).map((action) => actionButton(action, { text: true })));
    footer.replaceChildren(...actions.filter((action) => action.primary).map((action) => actionButton(action, { text: true })));
  };
  instance.watch(paint);
  if (instance.metadata) paint(instance.metadata);
  const clicked = (event) => {
    const button = event.target.closest(".widget-action");
    if (!button) return;
    const action = (instance.metadata?.actions || []).find((item) => item.id === button.dataset.actionId);
    if (action) instances.runAction(instance, action);
  };
  secondary.addEventListener("click", clicked);
  footer.addEventListener("click", clicked);
  close.addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => {
    instance.destroy();
    dialog.remove();
  });
  dialog.showModal();
  return instance.instanceId;
}
