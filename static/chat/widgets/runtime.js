// The widget runtime (docs/widgets.md): tags in answers become widgets, and `window.chatRuntime`
// is their API. It builds the parts and routes each rendering context to the one that shows it:
//
//   chat/widgets/definitions   the tag definitions of the page, and which tags become widgets
//   chat/widgets/events        the client runtime events
//   chat/widgets/instances     a widget mounted in its frame, and its end
//   chat/widgets/kinds         the widget kinds: built-in, custom renderers, web components
//   chat/widgets/chrome        the bar above a widget: title, icon, loading status, actions
//   chat/widgets/surfaces      the canvas and the dialog
//   chat/widgets/spotlight     the carousel above the message box
//   chat/widgets/hero          the one widget below it
//   chat/widgets/room          both yield the space once a conversation has messages
//
// createRuntime({config, api, host}) -> Runtime; host: the page's side, {sendMessage(text),
// suggest(text, {focus, highlight}), appState(), inlineHost()}, called only once the page is built.

import { el } from "chat/dom";
import { CONTEXTS, Definitions } from "chat/widgets/definitions";
import { Events } from "chat/widgets/events";
import { Hero } from "chat/widgets/hero";
import { Instances } from "chat/widgets/instances";
import { Room } from "chat/widgets/room";
import { Spotlight } from "chat/widgets/spotlight";
import { Canvas, openDialog } from "chat/widgets/surfaces";

const CANVAS_OPTIONS = ["companionMode", "chatPaneMinimized", "fullControl", "closeConfig"];
const TAG_ID = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export function createRuntime({ config, api, host }) {
  const runtime = new Runtime({ config, api, host });
  Object.defineProperty(window, "chatRuntime", { value: runtime.chatRuntime, configurable: false, writable: false, enumerable: true });
  return runtime;
}

// A tag's body is parsed as JSON when it is JSON, else handed over as its text (docs/widgets.md,
// "The context property").
function parseBody(body) {
  const text = (body || "").trim();
  if (/^[[{]/.test(text) || /^(-?\d|"|true$|false$|null$)/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      // not JSON: the text
    }
  }
  return body || "";
}

class Runtime {
  constructor({ config, api, host }) {
    const widgets = config.widgets || {};
    this.host = host;
    this.user = config.user;
    this.definitions = new Definitions(widgets.tags || widgets.definitions || []);
    this.events = new Events();
    this.chatRuntime = {};
    this.instances = new Instances({
      events: this.events,
      chatRuntime: this.chatRuntime,
      appState: () => host.appState(),
      services: {
        renderers: widgets.renderers,
        webComponentScripts: widgets.webComponentScripts,
        sendMessage: (text) => host.sendMessage(text),
        suggestQuestion: (text, options) => this.chatRuntime.suggestQuestion(text, options),
      },
    });
    this.canvas = new Canvas({ events: this.events, instances: this.instances });
    const parts = { definitions: this.definitions, instances: this.instances, events: this.events };
    const save = (prefs) => api.savePrefs(config.user?.userId, prefs);
    this.spotlight = new Spotlight({ ...parts, save });
    this.hero = new Hero(parts);
    this.room = new Room({ spotlight: this.spotlight, hero: this.hero, save, prefs: config.user?.prefs });
    // The shelf sits just above the message box.
    const shelf = el("div", { class: "shelf" }, this.spotlight.element, this.hero.element);
    const composer = document.querySelector(".composer");
    if (composer) composer.before(shelf);
    else document.body.append(shelf);
    installOperations(this.chatRuntime, this);
    // What chat/render does with the widget tags of an answer.
    this.tags = { accepts: (tagId, source) => this.definitions.accepts(tagId, source), render: (tag) => this.renderTextTag(tag) };
    // The chart library is loaded ahead, when the page is idle, if a chart tag may come.
    if (this.definitions.hasChart()) (window.requestIdleCallback || setTimeout)(() => import("uplot").catch(() => undefined));
  }

  // Once the page is built: the person's spotlight cards and the chat app's hero, as their prefs
  // and the definitions ask.
  start() {
    this.spotlight.start(this.user?.prefs || {});
    this.hero.start();
  }

  // Whether the conversation shown has messages: the spotlight and the hero then yield the space.
  conversing(hasMessages) {
    this.room.update(hasMessages);
  }

  // Inline widgets of messages no longer on the page (another session opened): their instances go.
  sweep() {
    this.instances.sweep();
  }

  // One complete tag of an answer, into `container` (chat/render keeps it as a frozen block).
  renderTextTag({ tagId, attributes, body, container }) {
    const definition = this.definitions.get(tagId);
    const data = parseBody(body);
    container.dataset.tagId = tagId;
    if (definition.widget?.type === "pass-through") {
      container.hidden = true;
      container.classList.add("widget-pass-through");
      return;
    }
    const contexts = definition.renderingContexts;
    if (contexts.inline.enabled) {
      this.instances.mount({ tagId, renderingContext: "inline", definition, data, attributes, host: container });
      return;
    }
    if (contexts.static.enabled) {
      container.hidden = true;
      this.renderStatic(tagId, data, attributes, definition);
      return;
    }
    const elsewhere = ["canvas", "dialog"].find((name) => contexts[name].enabled);
    if (elsewhere) {
      // Not an inline widget: the message offers to open it where it may render.
      const name = definition.description && definition.description !== tagId ? definition.description : tagId;
      const open = el("button", { type: "button", class: "button widget-open", "data-rendering-context": elsewhere, text: `Open ${name}` });
      open.addEventListener("click", () => this.render(tagId, elsewhere, data));
      container.append(open);
      return;
    }
    if (contexts.spotlight.enabled) this.spotlight.renderTag(tagId, data);
    else if (contexts.hero.enabled) this.hero.render(tagId, data);
    container.hidden = true;
  }

  // chatRuntime.renderTag: the instance id of the widget rendered.
  render(tagId, renderingContext, dataOrOptions, metadata) {
    if (typeof tagId !== "string" || !TAG_ID.test(tagId)) throw new TypeError("renderTag needs a tag id scope.tag");
    if (!CONTEXTS.includes(renderingContext)) throw new TypeError(`unknown rendering context: ${renderingContext}`);
    if (renderingContext === "spotlight") return this.spotlight.renderTag(tagId, dataOrOptions, metadata);
    if (renderingContext === "hero") return this.hero.render(tagId, dataOrOptions, metadata);
    const definition = this.definitions.forRender(tagId, renderingContext);
    if (!definition) throw new Error(`no widget definition for ${tagId}`);
    if (!definition.renderingContexts[renderingContext]?.enabled) throw new Error(`${tagId} does not render in ${renderingContext}`);
    const data = dataOrOptions ?? null;
    if (renderingContext === "canvas") return this.canvas.open({ tagId, metadata, definition, ...canvasRequest(dataOrOptions) });
    if (renderingContext === "dialog") return openDialog({ instances: this.instances, tagId, data, metadata, definition });
    if (renderingContext === "static") return this.renderStatic(tagId, data, {}, definition);
    // inline from the API: in the conversation, after the last message
    return this.instances.mount({ tagId, renderingContext, definition, data, host: this.host.inlineHost(), metadata }).instanceId;
  }

  // A widget that only runs its code, out of sight, removed after `shutDownAfterMs` when set.
  renderStatic(tagId, data, attributes, definition) {
    let host = document.getElementById("widget-static-host");
    if (!host) {
      host = el("div", { id: "widget-static-host", hidden: true });
      document.body.append(host);
    }
    const instance = this.instances.mount({ tagId, renderingContext: "static", definition, data, attributes, host });
    const after = Number(definition.renderingContexts.static?.shutDownAfterMs);
    if (Number.isFinite(after) && after >= 0) setTimeout(() => instance.destroy(), after);
    return instance.instanceId;
  }
}

// A canvas request's data and its CanvasWidgetOptions, which may come in the same object.
function canvasRequest(dataOrOptions) {
  const options = {};
  if (!dataOrOptions || typeof dataOrOptions !== "object" || !CANVAS_OPTIONS.some((key) => key in dataOrOptions)) {
    return { data: dataOrOptions ?? null, options };
  }
  for (const key of CANVAS_OPTIONS) if (key in dataOrOptions) options[key] = dataOrOptions[key];
  return { data: "data" in dataOrOptions ? dataOrOptions.data : null, options };
}

// window.chatRuntime: every widget runtime operation, and the read-only flags heroVisible,
// heroCollapsed and spotlightVisible (docs/widgets.md, "window.chatRuntime").
function installOperations(chatRuntime, runtime) {
  const { instances, canvas, spotlight, hero, events, host } = runtime;
  const instance = (instanceId) => {
    const found = instances.get(instanceId);
    if (!found) throw new Error(`no widget instance ${instanceId}`);
    return found;
  };
  Object.defineProperties(chatRuntime, {
    heroVisible: { get: () => hero.visible, enumerable: true },
    heroCollapsed: { get: () => hero.collapsed, enumerable: true },
    spotlightVisible: { get: () => spotlight.visible, enumerable: true },
  });
  Object.assign(chatRuntime, {
    renderTag: (tagId, renderingContext, dataOrOptions, metadata) => runtime.render(tagId, renderingContext, dataOrOptions, metadata),
    manuallyRegisterSpotlightWidget: (registration) => spotlight.register(registration),
    getWidgetMetadataAPI(scope, tag, instanceId, renderingContext) {
      const find = () => {
        const found = instances.get(instanceId);
        if (!found) return null;
        if (found.tagId !== `${scope}.${tag}`) throw new Error(`instance ${instanceId} is not a ${scope}.${tag} widget`);
        if (renderingContext && found.renderingContext !== renderingContext)
          throw new Error(`instance ${instanceId} is not in ${renderingContext}`);
        return found;
      };
      find();
      return {
        setMetadata: (metadata) => find()?.setMetadata(metadata || {}),
        setLoadingStatus: (loading, loadingMsg) =>
          find()?.setMetadata({ loadingStatus: { loading: !!loading, loadingMsg: loadingMsg ?? undefined } }),
      };
    },
    showHero: () => hero.show(),
    hideHero: () => hero.hide(),
    closeHero: () => hero.close(),
    collapseHero: () => hero.setCollapsed(true),
    expandHero: () => hero.setCollapsed(false),
    toggleHeroCollapsed: () => hero.toggleCollapsed(),
    showSpotlight: () => spotlight.setVisible(true),
    hideSpotlight: () => spotlight.setVisible(false),
    toggleSpotlight: () => spotlight.setVisible(!spotlight.visible),
    requestCanvasClose: () => canvas.requestClose(),
    signalWidgetReady(instanceId) {
      const found = instances.get(instanceId);
      if (!found) return;
      found.frame.dataset.ready = "true";
      events.emit("widgetReady", { tagId: found.tagId, instanceId, renderingContext: found.renderingContext });
    },
    async sendCommandToWidget(instanceId, command) {
      const target = instance(instanceId);
      const results = [];
      for (const handler of [...target.handlers]) results.push(await handler(command));
      if (typeof target.element?.onCommand === "function" && !target.handlers.size) results.push(await target.element.onCommand(command));
      return results.length <= 1 ? results[0] : results;
    },
    suggestQuestion(text, options = {}) {
      const { focus = true, highlight = true, expandChatPane = true } = options || {};
      if (expandChatPane) canvas.expandChatPane();
      host.suggest(String(text ?? ""), { focus, highlight });
    },
    addEventListener(name, handler, instanceId) {
      const off = events.subscribe(name, handler);
      const owner = instanceId ? instances.get(instanceId) : null;
      return owner ? owner.own(off) : off;
    },
    registerIntentRouterHandler(instanceId, tagId, handler) {
      const target = instance(instanceId);
      if (tagId && target.tagId !== tagId) throw new Error(`instance ${instanceId} is not a ${tagId} widget`);
      if (typeof handler !== "function") throw new TypeError("registerIntentRouterHandler needs a function");
      target.handlers.add(handler);
      return target.own(() => target.handlers.delete(handler));
    },
  });
}
