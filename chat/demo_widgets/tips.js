// demo.tips: the spotlight's default widget, a web component served from the widget store
// (encoding gzip+base64). Each tip is a question the user can put in the message box.
const TIPS = [
  ["Charts", "Show me a chart of this week's visitors"],
  ["A counter that remembers", "Show me a counter"],
  ["Suggestions", "Give me a suggestion"],
  ["Tools", "What time is it in Tokyo?"],
];
const sheet = new CSSStyleSheet();
sheet.replaceSync(`
  :host { display: block; }
  ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .4rem; }
  button { font: inherit; font-size: .9rem; padding: .3rem .7rem; border-radius: 1rem; border: 1px solid var(--border, #cbd5e1); background: var(--panel, #fff); color: var(--text, #1d2330); cursor: pointer; }
  button:hover, button:focus-visible { border-color: #2563eb; }
`);

class DemoTips extends HTMLElement {
  connectedCallback() {
    const { chatAppState, instanceId, tagId, renderingContext } = this.context;
    const [scope, tag] = tagId.split(".");
    const root = this.attachShadow({ mode: "open" });
    root.adoptedStyleSheets = [sheet];
    const list = document.createElement("ul");
    for (const [title, question] of TIPS) {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.textContent = title;
      button.title = question;
      button.addEventListener("click", () => chatAppState.suggestQuestion(question));
      item.append(button);
      list.append(item);
    }
    root.append(list);
    chatAppState.getWidgetMetadataAPI(scope, tag, instanceId, renderingContext).setMetadata({ title: "Try these", lucideIconName: "lightbulb" });
    chatAppState.signalWidgetReady(instanceId);
  }
}

if (!customElements.get("demo-tips")) customElements.define("demo-tips", DemoTips);
