// A test widget (tests/pages/test_widgets.py): records into window.__widgetLog what it receives
// from the runtime (its context, and whether it was connected when it got it), the commands sent
// to it and the events it hears, and exercises the runtime operations a widget calls.
window.__widgetLog = window.__widgetLog || [];
const log = (entry) => window.__widgetLog.push(entry);
const EVENTS = ["widgetOpen", "widgetClose", "widgetReady", "canvasOpen", "canvasClose", "chatPaneMinimized", "chatPaneExpanded", "companionModeEnter", "companionModeExit"];

class Recorder extends HTMLElement {
  set context(value) {
    this._context = value;
    log({
      kind: "context", connected: this.isConnected, instanceId: value.instanceId, tagId: value.tagId,
      renderingContext: value.renderingContext, data: value.data, attributes: value.attributes,
      appState: value.appState, isRuntime: value.chatAppState === window.chatRuntime,
    });
  }

  get context() {
    return this._context;
  }

  connectedCallback() {
    const { chatAppState: runtime, instanceId, tagId, data, attributes } = this._context;
    const [scope, tag] = tagId.split(".");
    this.textContent = `recorder ${typeof data === "string" ? data : JSON.stringify(data)} ${JSON.stringify(attributes)}`;
    for (const name of EVENTS) runtime.addEventListener(name, (payload) => log({ kind: "event", name, payload, heardBy: instanceId }), instanceId);
    runtime.registerIntentRouterHandler(instanceId, tagId, (command) => {
      log({ kind: "command", instanceId, command });
      return { handledBy: instanceId, echo: command };
    });
    const meta = runtime.getWidgetMetadataAPI(scope, tag, instanceId, this._context.renderingContext);
    meta.setMetadata({
      title: attributes.title || "Recorder",
      lucideIconName: "activity",
      iconColor: "rgb(220, 38, 38)",
      actions: [
        { id: "note", title: "Take a note", callback: (context) => log({ kind: "action", id: "note", instanceId: context.instanceId, same: context.element === this }) },
        { id: "save", title: "Save", primary: true, callback: async (context) => log({ kind: "action", id: "save", instanceId: context.instanceId }) },
      ],
    });
    if (attributes.loading === "stay") {
      meta.setLoadingStatus(true, "Fetching figures");
    } else {
      runtime.signalWidgetReady(instanceId);
    }
  }

  disconnectedCallback() {
    log({ kind: "disconnected", instanceId: this._context?.instanceId });
  }
}

customElements.define("test-recorder", Recorder);
