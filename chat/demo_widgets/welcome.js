// demo.welcome: the hero, a web component served from the widget store (encoding none). Heroes
// stay mounted while hidden, so it counts how often it was shown on heroDidShow.
const config = JSON.parse(document.getElementById("chat-config")?.textContent || "{}");
const sheet = new CSSStyleSheet();
sheet.replaceSync(`
  :host { display: block; }
  p { margin: 0 0 .5rem; }
  button { font: inherit; padding: .3rem .8rem; border-radius: .4rem; border: 1px solid #2563eb; background: #2563eb; color: #fff; cursor: pointer; }
`);

class DemoWelcome extends HTMLElement {
  connectedCallback() {
    const { chatAppState, instanceId, tagId, renderingContext } = this.context;
    const [scope, tag] = tagId.split(".");
    const root = this.attachShadow({ mode: "open" });
    root.adoptedStyleSheets = [sheet];
    const greeting = document.createElement("p");
    greeting.textContent = `Welcome, ${config.user?.name || "there"}. This demo runs offline: ask for a chart, a counter or a suggestion.`;
    const button = document.createElement("button");
    button.textContent = "Show me a chart";
    button.addEventListener("click", () => chatAppState.suggestQuestion("Show me a chart of this week's visitors"));
    root.append(greeting, button);
    chatAppState.getWidgetMetadataAPI(scope, tag, instanceId, renderingContext).setMetadata({ title: "Welcome", lucideIconName: "sparkles" });
    chatAppState.addEventListener("heroDidShow", () => { this.dataset.shown = String(Number(this.dataset.shown || 0) + 1); }, instanceId);
    chatAppState.signalWidgetReady(instanceId);
  }
}

if (!customElements.get("demo-welcome")) customElements.define("demo-welcome", DemoWelcome);
