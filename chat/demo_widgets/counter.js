// demo.counter: a web component served from the widget store (encoding gzip). It keeps its count
// per user through the widget data API, so the number survives reloads and new sessions.
// A complete example for docs/widgets.md: the `context` property, chatRuntime, widget data.
const config = JSON.parse(document.getElementById("chat-config")?.textContent || "{}");
const sheet = new CSSStyleSheet();
sheet.replaceSync(`
  :host { display: block; font: inherit; }
  .row { display: flex; gap: .5rem; align-items: center; }
  output { font-size: 1.6rem; min-width: 3ch; text-align: center; font-variant-numeric: tabular-nums; }
  button { font: inherit; padding: .25rem .75rem; border-radius: .4rem; border: 1px solid var(--border, #94a3b8); background: var(--bg, #f8fafc); color: var(--text, #1d2330); cursor: pointer; }
`);

class DemoCounter extends HTMLElement {
  async connectedCallback() {
    const { chatAppState, instanceId, tagId, renderingContext, attributes } = this.context;
    const [scope, tag] = tagId.split(".");
    this.url = `${config.widgets?.widgetDataUrl || "/api/chat/widget-data/"}${scope}/${tag}`;
    const root = this.attachShadow({ mode: "open" });
    root.adoptedStyleSheets = [sheet];
    const row = document.createElement("div");
    row.className = "row";
    const minus = this.button("−", -1);
    this.output = document.createElement("output");
    const plus = this.button("+", 1);
    const reset = document.createElement("button");
    reset.textContent = "Reset";
    reset.addEventListener("click", () => this.save(0));
    row.append(minus, this.output, plus, reset);
    root.append(row);

    this.meta = chatAppState.getWidgetMetadataAPI(scope, tag, instanceId, renderingContext);
    this.meta.setMetadata({ title: attributes.title || "Counter", lucideIconName: "hash" });
    this.meta.setLoadingStatus(true, "Reading your count…");
    const response = await fetch(`${this.url}?userId=${encodeURIComponent(config.user?.userId || "")}`, { credentials: "same-origin" });
    const body = await response.json();
    this.show(body.data?.count ?? 0);
    this.meta.setLoadingStatus(false);
    chatAppState.signalWidgetReady(instanceId);
  }

  button(label, step) {
    const button = document.createElement("button");
    button.textContent = label;
    button.setAttribute("aria-label", step > 0 ? "Add one" : "Take one away");
    button.addEventListener("click", () => this.save(this.count + step));
    return button;
  }

  show(count) {
    this.count = count;
    this.output.value = String(count);
  }

  // Writes go one after another: quick clicks would otherwise race, and an older count could land last.
  save(count) {
    this.show(count);
    const write = () =>
      fetch(this.url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": config.csrfToken },
        body: JSON.stringify({ data: { count }, partial: true }),
      });
    this.writes = (this.writes || Promise.resolve()).then(write, write);
    return this.writes;
  }
}

if (!customElements.get("demo-counter")) customElements.define("demo-counter", DemoCounter);
