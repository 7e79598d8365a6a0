// Widget instances: a widget of any kind mounted in any rendering context, inside a frame with its
// chrome (chat/widgets/chrome) above it. An instance ends with what shows it: its subscriptions,
// intent handlers and metadata watchers go with it, and its context lets go of the runtime.

import { el } from "chat/dom";
import { Chrome } from "chat/widgets/chrome";
import { loadWidget } from "chat/widgets/kinds";

export class Instance {
  constructor({ tagId, instanceId, renderingContext, definition, context, destroy }) {
    this.tagId = tagId;
    this.instanceId = instanceId;
    this.renderingContext = renderingContext;
    this.definition = definition;
    this.context = context; // the widget's `context` property (docs/widgets.md, "The context property")
    this.chrome = new Chrome({ renderingContext });
    this.body = el("div", { class: "widget-body" });
    this.frame = el(
      "div",
      { class: "widget-frame", "data-tag-id": tagId, "data-instance-id": instanceId, "data-rendering-context": renderingContext },
      this.chrome.element,
      this.body,
    );
    this.element = null; // the widget's own element, once loaded
    this.metadata = null;
    this.handlers = new Set(); // registerIntentRouterHandler
    this.cleanups = new Set(); // what ends with the instance
    this.watchers = new Set(); // told of each metadata change
    this.unload = null;
    this.destroyed = false;
    this.destroy = destroy;
  }

  setMetadata(metadata) {
    this.metadata = { ...(this.metadata || {}), ...metadata };
    this.chrome.set(this.metadata);
    for (const watcher of this.watchers) watcher(this.metadata);
  }

  watch(watcher) {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  // `cleanup` runs when the instance ends, unless the returned function ran it first.
  own(cleanup) {
    const run = () => {
      this.cleanups.delete(run);
      cleanup();
    };
    this.cleanups.add(run);
    return run;
  }

  // A surface's own buttons (close, collapse, move), after the widget's actions; the bar then
  // always shows.
  addTools(...buttons) {
    this.chrome.always = true;
    this.chrome.tools.append(...buttons);
    this.chrome.refreshVisibility();
  }
}

export class Instances {
  // `chatRuntime`: window.chatRuntime, in each widget's context; `appState()`: the page's state a
  // widget is given; `services`: what the widget kinds need of the page (chat/widgets/kinds).
  constructor({ events, chatRuntime, appState, services }) {
    this.events = events;
    this.chatRuntime = chatRuntime;
    this.appState = appState;
    this.services = services;
    this.byId = new Map();
    this.counter = 0;
  }

  get(instanceId) {
    return this.byId.get(instanceId) || null;
  }

  // Mounts a widget into `host` (an element): its frame is there at once, the widget itself loads
  // asynchronously (web components, custom renderers); `instance.ready` settles when it has.
  mount({ tagId, renderingContext, definition, data = null, attributes = {}, instanceId = null, host = null, metadata = null }) {
    instanceId = instanceId || `${tagId}#${++this.counter}`;
    if (this.byId.has(instanceId)) throw new Error(`widget instance ${instanceId} exists already`);
    const context = {
      chatAppState: this.chatRuntime,
      appState: this.appState(),
      instanceId,
      tagId,
      renderingContext,
      data,
      attributes: { ...attributes },
    };
    const instance = new Instance({ tagId, instanceId, renderingContext, definition, context, destroy: () => this.destroy(instanceId) });
    this.byId.set(instanceId, instance);
    instance.chrome.onAction = (action) => this.runAction(instance, action);
    if (metadata) instance.setMetadata(metadata);
    host?.append(instance.frame);
    this.events.emit("widgetOpen", { tagId, instanceId, renderingContext });
    instance.ready = loadWidget({ definition, context, body: instance.body, frame: instance.frame, services: this.services })
      .then((loaded) => {
        if (instance.destroyed) {
          loaded?.unload?.();
          return;
        }
        instance.element = loaded?.element || null;
        instance.unload = loaded?.unload || null;
      })
      .catch((error) => {
        instance.frame.classList.add("widget-failed");
        instance.body.replaceChildren(el("p", { class: "widget-error", text: `This widget (${tagId}) could not load: ${error.message}` }));
        console.error(`widget ${tagId} failed to load`, error);
      });
    return instance;
  }

  destroy(instanceId) {
    const instance = this.byId.get(instanceId);
    if (!instance || instance.destroyed) return;
    instance.destroyed = true;
    try {
      instance.unload?.();
    } catch (error) {
      console.error("widget unload failed", error);
    }
    instance.frame.remove();
    this.events.emit("widgetClose", { tagId: instance.tagId, instanceId, renderingContext: instance.renderingContext });
    for (const cleanup of [...instance.cleanups]) cleanup();
    instance.handlers.clear();
    instance.watchers.clear();
    instance.chrome.destroy();
    instance.context.chatAppState = null;
    instance.element = null;
    this.byId.delete(instanceId);
  }

  async runAction(instance, action) {
    if (!action || action.disabled || typeof action.callback !== "function") return;
    await action.callback({ element: instance.element, instanceId: instance.instanceId, context: instance.context });
  }

  // Inline widgets of messages no longer on the page (another session opened): their instances go.
  sweep() {
    for (const instance of [...this.byId.values()]) {
      if (instance.renderingContext === "inline" && !instance.frame.isConnected) instance.destroy();
    }
  }
}
