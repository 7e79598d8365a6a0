// The widget runtime (issue 22; SPEC.md "Widget runtime operations", "Client runtime events";
// CONTRACT §13): tags in answers become widgets, and `window.chatRuntime` is their API.
//
// Interface shared with ./shelf.js (spotlight and hero):
//   createRuntime({config, host}) -> runtime; installs `window.chatRuntime` (= runtime.api).
//     config: the page's JSON config (`config.widgets`, docs/widgets.md); host: the page's side,
//     {sendMessage(text), suggest(text, {focus, highlight}), appState(), inlineHost()}.
//   runtime.renderTextTag / runtime.acceptsTag: the tag renderer render.js calls for answers.
//   runtime.emit(name, payload)          fires a client runtime event to its subscribers.
//   runtime.mountWidget({tagId, renderingContext, data, attributes, instanceId?, host, metadata?})
//     -> {element, instanceId, destroy()}: mounts a widget of any kind into `host` (an element);
//     `element` is the frame around it (chrome + body), there at once; the widget itself loads
//     asynchronously (web components, custom renderers). destroy() emits widgetClose, drops the
//     instance's listeners and handlers, and removes the frame.
//   runtime.definitions: Map tagId ("scope.tag") -> definition, renderingContexts normalised to
//     `{enabled, ...options}` objects.
//   runtime.prefs: {get() -> Promise<prefs>, save(partialPrefs) -> Promise<prefs>} (user prefs).
//   installShelf({runtime, mountWidget, emit, definitions, prefs}) (from ./shelf.js) is called
//   once; it defines on runtime.api the hero and spotlight operations, the read-only flags
//   `heroVisible`, `heroCollapsed`, `spotlightVisible`, `manuallyRegisterSpotlightWidget`, and
//   returns {render(renderingContext, tagId, dataOrOptions, metadata) -> instanceId | null}, which
//   renderTag calls for "spotlight" and "hero".

import { installShelf } from "chat/widgets/shelf";
import { loadWidget } from "chat/widgets/kinds";
import { Chrome } from "chat/widgets/chrome";
import { Canvas, openDialog } from "chat/widgets/surfaces";

export const CONTEXTS = ["inline", "canvas", "dialog", "spotlight", "static", "hero"];
const EVENTS = new Set([
  "widgetOpen", "widgetClose", "widgetReady", "canvasOpen", "canvasClose", "chatPaneMinimized", "chatPaneExpanded",
  "companionModeEnter", "companionModeExit", "heroWillShow", "heroDidShow", "heroWillHide", "heroDidHide",
  "heroCollapse", "heroExpand", "spotlightShow", "spotlightHide",
]);
const CANVAS_OPTIONS = ["companionMode", "chatPaneMinimized", "fullControl", "closeConfig"];

// SPEC.md gives each context as a boolean or as {enabled, ...options}: one shape from here on.
export function normaliseContexts(contexts) {
  const out = {};
  for (const name of CONTEXTS) {
    const value = contexts ? contexts[name] : undefined;
    if (value === true) out[name] = { enabled: true };
    else if (value && typeof value === "object") out[name] = { ...value, enabled: value.enabled !== false };
    else out[name] = { enabled: false };
  }
  return out;
}

export function normaliseDefinition(definition) {
  return { ...definition, renderingContexts: normaliseContexts(definition.renderingContexts) };
}

// SPEC.md: a canvas or dialog request for a tag with no definition gets a minimal one.
function minimalDefinition(tagId, renderingContext) {
  const [scope, tag] = tagId.split(".");
  return normaliseDefinition({
    scope, tag, usageMode: "chat-app", status: "enabled", widget: { type: "web-component", webComponent: {} },
    renderingContexts: { [renderingContext]: { enabled: true } }, canBeGeneratedByLlm: false, canBeGeneratedByTool: false,
    description: tagId, generated: true,
  });
}

let instanceCounter = 0;

export function createRuntime({ config, host }) {
  const widgets = config.widgets || {};
  const definitions = new Map();
  for (const definition of widgets.tags || widgets.definitions || []) definitions.set(`${definition.scope}.${definition.tag}`, normaliseDefinition(definition));

  const listeners = new Map(); // event name -> Set of handlers
  const instances = new Map(); // instanceId -> instance record
  const api = {};

  function emit(name, payload = {}) {
    for (const handler of [...(listeners.get(name) || [])]) {
      try {
        handler(payload);
      } catch (error) {
        console.error(`chatRuntime: a ${name} handler failed`, error);
      }
    }
  }

  function subscribe(name, handler, instanceId) {
    if (!EVENTS.has(name)) throw new TypeError(`unknown chatRuntime event: ${name}`);
    if (typeof handler !== "function") throw new TypeError("addEventListener needs a function");
    if (!listeners.has(name)) listeners.set(name, new Set());
    // A fresh wrapper per subscription: the same handler subscribed twice is unsubscribed once each.
    const entry = (payload) => handler(payload);
    listeners.get(name).add(entry);
    let unsubscribe = () => {
      listeners.get(name)?.delete(entry);
      instances.get(instanceId)?.cleanups.delete(unsubscribe);
      unsubscribe = () => undefined;
    };
    const off = () => unsubscribe();
    if (instanceId && instances.has(instanceId)) instances.get(instanceId).cleanups.add(off);
    return off;
  }

  function definitionFor(tagId, renderingContext) {
    let definition = definitions.get(tagId);
    if (!definition && (renderingContext === "canvas" || renderingContext === "dialog")) {
      definition = minimalDefinition(tagId, renderingContext);
      definitions.set(tagId, definition);
    }
    return definition || null;
  }

  function appState() {
    return host.appState ? host.appState() : { chatAppId: config.chatAppId, agentId: config.agentId, userId: config.user?.userId };
  }

  function mountWidget({ tagId, renderingContext, data = null, attributes = {}, instanceId = null, host: into, metadata = null, definition = null }) {
    definition = definition || definitionFor(tagId, renderingContext);
    if (!definition) throw new Error(`no widget definition for ${tagId}`);
    instanceId = instanceId || `${tagId}#${++instanceCounter}`;
    if (instances.has(instanceId)) throw new Error(`widget instance ${instanceId} exists already`);
    const frame = document.createElement("div");
    frame.className = "widget-frame";
    frame.dataset.tagId = tagId;
    frame.dataset.instanceId = instanceId;
    frame.dataset.renderingContext = renderingContext;
    const chrome = new Chrome({ renderingContext });
    const body = document.createElement("div");
    body.className = "widget-body";
    frame.append(chrome.element, body);
    const context = { chatAppState: api, appState: appState(), instanceId, tagId, renderingContext, data, attributes: { ...attributes } };
    const instance = {
      tagId, instanceId, renderingContext, definition, frame, body, chrome, context, element: null,
      cleanups: new Set(), handlers: new Set(), unload: null, destroyed: false, onMetadata: new Set(),
    };
    instances.set(instanceId, instance);
    chrome.onAction = (action) => runAction(instance, action);
    if (metadata) setMetadata(instance, metadata);
    into?.append(frame);
    emit("widgetOpen", { tagId, instanceId, renderingContext });
    instance.ready = loadWidget({ definition, context, body, runtime, instance })
      .then((loaded) => {
        if (instance.destroyed) {
          loaded?.unload?.();
          return;
        }
        instance.element = loaded?.element || null;
        instance.unload = loaded?.unload || null;
      })
      .catch((error) => {
        frame.classList.add("widget-failed");
        body.replaceChildren(Object.assign(document.createElement("p"), { className: "widget-error", textContent: `This widget (${tagId}) could not load: ${error.message}` }));
        console.error(`widget ${tagId} failed to load`, error);
      });
    return {
      element: frame,
      instanceId,
      ready: instance.ready,
      destroy: () => destroy(instanceId),
    };
  }

  function destroy(instanceId) {
    const instance = instances.get(instanceId);
    if (!instance || instance.destroyed) return;
    instance.destroyed = true;
    try {
      instance.unload?.();
    } catch (error) {
      console.error("widget unload failed", error);
    }
    instance.frame.remove();
    emit("widgetClose", { tagId: instance.tagId, instanceId, renderingContext: instance.renderingContext });
    for (const cleanup of [...instance.cleanups]) cleanup();
    instance.handlers.clear();
    instance.onMetadata.clear();
    instance.chrome.destroy();
    instance.context.chatAppState = null;
    instance.element = null;
    instances.delete(instanceId);
  }

  function setMetadata(instance, metadata) {
    instance.metadata = { ...(instance.metadata || {}), ...metadata };
    instance.chrome.set(instance.metadata);
    for (const listener of instance.onMetadata) listener(instance.metadata);
  }

  async function runAction(instance, action) {
    if (!action || action.disabled || typeof action.callback !== "function") return;
    await action.callback({ element: instance.element, instanceId: instance.instanceId, context: instance.context });
  }

  // A tag written in an answer becomes a widget only when this chat app may use it (config.widgets.tags
  // lists only those), and its definition lets its source ("model" or "tool") write it.
  function acceptsTag(tagId, source) {
    const definition = definitions.get(tagId);
    if (!definition || definition.generated || (definition.status && definition.status !== "enabled")) return false;
    return source === "tool" ? definition.canBeGeneratedByTool === true : definition.canBeGeneratedByLlm === true;
  }

  // One complete tag of an answer, into `container` (render.js keeps it as a frozen block).
  function renderTextTag({ tagId, attributes, body, container, receivedAt }) {
    const definition = definitions.get(tagId);
    const data = parseBody(body);
    container.dataset.tagId = tagId;
    if (definition.widget?.type === "pass-through") {
      container.hidden = true;
      container.classList.add("widget-pass-through");
      return;
    }
    const contexts = definition.renderingContexts;
    if (contexts.inline.enabled) {
      const mounted = mountWidget({ tagId, renderingContext: "inline", data, attributes, host: container, definition });
      if (receivedAt) measurePaint(mounted, receivedAt);
      return;
    }
    if (contexts.static.enabled) {
      container.hidden = true;
      renderStatic(tagId, data, attributes, definition);
      return;
    }
    const elsewhere = ["canvas", "dialog"].find((name) => contexts[name].enabled);
    if (elsewhere) {
      // Not an inline widget: the message offers to open it where it may render.
      const open = document.createElement("button");
      open.type = "button";
      open.className = "button widget-open";
      open.dataset.renderingContext = elsewhere;
      open.textContent = `Open ${definition.description && definition.description !== tagId ? definition.description : tagId}`;
      open.addEventListener("click", () => render(tagId, elsewhere, data));
      container.append(open);
      return;
    }
    const shelfContext = ["spotlight", "hero"].find((name) => contexts[name].enabled);
    if (shelfContext) shelf.render(shelfContext, tagId, data);
    container.hidden = true;
  }

  // How long from the text that completed a tag arriving to the widget's first paint: a
  // performance measure "widget:paint" per inline widget (bench/widgets.py reads them). A widget
  // drawn in this frame (its module already loaded) is painted by the next task; one still loading
  // is painted in the frame after it loads.
  function measurePaint(mounted, receivedAt) {
    let settled = false;
    const measure = () => performance.measure("widget:paint", { start: receivedAt, end: performance.now(), detail: { instanceId: mounted.instanceId } });
    mounted.ready.then(() => (settled = true));
    setTimeout(() => {
      if (settled) measure();
      else mounted.ready.then(() => requestAnimationFrame(() => setTimeout(measure, 0)));
    }, 0);
  }

  // The chart library is loaded ahead, when the page is idle, if a chart tag may come.
  if ([...definitions.values()].some((definition) => definition.widget?.builtInType === "chart")) {
    (window.requestIdleCallback || setTimeout)(() => import("uplot").catch(() => undefined));
  }

  // Inline widgets of messages no longer on the page (another session opened): their instances go.
  function sweep() {
    for (const instance of [...instances.values()]) {
      if (instance.renderingContext === "inline" && !instance.frame.isConnected) destroy(instance.instanceId);
    }
  }

  const canvas = new Canvas({ runtime: null, emit, mountWidget, host });
  const runtime = {
    api, emit, mountWidget, definitions, instances, destroy, setMetadata, runAction, host, config, canvas,
    prefs: prefsStore(config), acceptsTag, renderTextTag, sweep,
  };
  canvas.runtime = runtime;

  function render(tagId, renderingContext, dataOrOptions, metadata) {
    if (typeof tagId !== "string" || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(tagId)) throw new TypeError("renderTag needs a tag id scope.tag");
    if (!CONTEXTS.includes(renderingContext)) throw new TypeError(`unknown rendering context: ${renderingContext}`);
    if (renderingContext === "spotlight" || renderingContext === "hero") return shelf.render(renderingContext, tagId, dataOrOptions, metadata);
    const definition = definitionFor(tagId, renderingContext);
    if (!definition) throw new Error(`no widget definition for ${tagId}`);
    if (!definition.renderingContexts[renderingContext]?.enabled) throw new Error(`${tagId} does not render in ${renderingContext}`);
    if (renderingContext === "canvas") {
      const options = {};
      let data = dataOrOptions;
      if (dataOrOptions && typeof dataOrOptions === "object" && CANVAS_OPTIONS.some((key) => key in dataOrOptions)) {
        for (const key of CANVAS_OPTIONS) if (key in dataOrOptions) options[key] = dataOrOptions[key];
        data = "data" in dataOrOptions ? dataOrOptions.data : null;
      }
      return canvas.open({ tagId, data, options, metadata, definition });
    }
    if (renderingContext === "dialog") {
      return openDialog({ runtime, tagId, data: dataOrOptions ?? null, metadata, definition });
    }
    if (renderingContext === "static") return renderStatic(tagId, dataOrOptions ?? null, {}, definition);
    // inline from the API: in the conversation, after the last message
    const place = host.inlineHost ? host.inlineHost() : document.body;
    return mountWidget({ tagId, renderingContext, data: dataOrOptions ?? null, host: place, metadata, definition }).instanceId;
  }

  function renderStatic(tagId, data, attributes, definition) {
    const shelfHost = staticHost();
    const mounted = mountWidget({ tagId, renderingContext: "static", data, attributes, host: shelfHost, definition });
    const after = Number(definition.renderingContexts.static?.shutDownAfterMs);
    if (Number.isFinite(after) && after >= 0) setTimeout(() => mounted.destroy(), after);
    return mounted.instanceId;
  }

  function staticHost() {
    let node = document.getElementById("widget-static-host");
    if (!node) {
      node = document.createElement("div");
      node.id = "widget-static-host";
      node.hidden = true;
      document.body.append(node);
    }
    return node;
  }

  Object.assign(api, {
    renderTag: (tagId, renderingContext, dataOrOptions, metadata) => render(tagId, renderingContext, dataOrOptions, metadata),
    getWidgetMetadataAPI(scope, tag, instanceId, renderingContext) {
      const find = () => {
        const instance = instances.get(instanceId);
        if (!instance) return null;
        if (instance.tagId !== `${scope}.${tag}`) throw new Error(`instance ${instanceId} is not a ${scope}.${tag} widget`);
        if (renderingContext && instance.renderingContext !== renderingContext) throw new Error(`instance ${instanceId} is not in ${renderingContext}`);
        return instance;
      };
      find();
      return {
        setMetadata(metadata) {
          const instance = find();
          if (instance) setMetadata(instance, metadata || {});
        },
        setLoadingStatus(loading, loadingMsg) {
          const instance = find();
          if (instance) setMetadata(instance, { loadingStatus: { loading: !!loading, loadingMsg: loadingMsg ?? undefined } });
        },
      };
    },
    requestCanvasClose: () => canvas.requestClose(),
    signalWidgetReady(instanceId) {
      const instance = instances.get(instanceId);
      if (!instance) return;
      instance.frame.dataset.ready = "true";
      emit("widgetReady", { tagId: instance.tagId, instanceId, renderingContext: instance.renderingContext });
    },
    async sendCommandToWidget(instanceId, command) {
      const instance = instances.get(instanceId);
      if (!instance) throw new Error(`no widget instance ${instanceId}`);
      const results = [];
      for (const handler of [...instance.handlers]) results.push(await handler(command));
      if (instance.element && typeof instance.element.onCommand === "function" && !instance.handlers.size) {
        results.push(await instance.element.onCommand(command));
      }
      return results.length <= 1 ? results[0] : results;
    },
    suggestQuestion(text, options = {}) {
      const { focus = true, highlight = true, expandChatPane = true } = options || {};
      if (expandChatPane) canvas.expandChatPane();
      host.suggest(String(text ?? ""), { focus, highlight });
    },
    addEventListener: (name, handler, instanceId) => subscribe(name, handler, instanceId),
    registerIntentRouterHandler(instanceId, tagId, handler) {
      const instance = instances.get(instanceId);
      if (!instance) throw new Error(`no widget instance ${instanceId}`);
      if (tagId && instance.tagId !== tagId) throw new Error(`instance ${instanceId} is not a ${tagId} widget`);
      if (typeof handler !== "function") throw new TypeError("registerIntentRouterHandler needs a function");
      instance.handlers.add(handler);
      const off = () => instance.handlers.delete(handler);
      instance.cleanups.add(off);
      return off;
    },
  });

  const shelf = installShelf({ runtime, mountWidget, emit, definitions, prefs: runtime.prefs }) || { render: () => null };
  runtime.shelf = shelf;
  Object.defineProperty(window, "chatRuntime", { value: api, configurable: false, writable: false, enumerable: true });
  return runtime;
}

// CONTRACT §13: a tag's body is parsed as JSON when it is JSON, else handed over as its text.
export function parseBody(body) {
  const text = (body || "").trim();
  if (/^[[{]/.test(text) || /^(-?\d|"|true$|false$|null$)/.test(text)) {
    try {
      return JSON.parse(text);
    } catch (error) {
      // not JSON: the text
    }
  }
  return body || "";
}

// The user's prefs through the Chat API (CONTRACT §5); the shelf keeps pinning and order there.
function prefsStore(config) {
  const headers = { Accept: "application/json", "Content-Type": "application/json", "X-CSRFToken": config.csrfToken };
  let inPage = config.user?.prefs; // as the page was served; later reads ask the API
  return {
    async get() {
      if (inPage) {
        const prefs = inPage;
        inPage = null;
        return prefs;
      }
      const response = await fetch("/api/chat/user/prefs", { credentials: "same-origin", headers: { Accept: "application/json" } });
      const body = await response.json();
      return body.prefs || {};
    },
    async save(partial) {
      const response = await fetch("/api/chat/user/prefs", {
        method: "POST", credentials: "same-origin", headers,
        body: JSON.stringify({ userId: config.user?.userId, prefs: partial, partial: true }),
      });
      const body = await response.json();
      return body.prefs || {};
    },
  };
}
