// The client runtime events (docs/widgets.md, "Events"): subscribed through
// chatRuntime.addEventListener, each handler called with the event's payload.

const NAMES = new Set([
  "widgetOpen",
  "widgetClose",
  "widgetReady",
  "canvasOpen",
  "canvasClose",
  "chatPaneMinimized",
  "chatPaneExpanded",
  "companionModeEnter",
  "companionModeExit",
  "heroWillShow",
  "heroDidShow",
  "heroWillHide",
  "heroDidHide",
  "heroCollapse",
  "heroExpand",
  "spotlightShow",
  "spotlightHide",
]);

export class Events {
  constructor() {
    this.handlers = new Map(); // event name -> Set of subscriptions
  }

  // A handler that throws is logged; the others still hear the event.
  emit(name, payload = {}) {
    for (const handler of [...(this.handlers.get(name) || [])]) {
      try {
        handler(payload);
      } catch (error) {
        console.error(`chatRuntime: a ${name} handler failed`, error);
      }
    }
  }

  // Returns the unsubscribe function; calling it again does nothing.
  subscribe(name, handler) {
    if (!NAMES.has(name)) throw new TypeError(`unknown chatRuntime event: ${name}`);
    if (typeof handler !== "function") throw new TypeError("addEventListener needs a function");
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    // A fresh wrapper per subscription: the same handler subscribed twice is unsubscribed once each.
    const subscription = (payload) => handler(payload);
    this.handlers.get(name).add(subscription);
    return () => {
      this.handlers.get(name).delete(subscription);
    };
  }
}
