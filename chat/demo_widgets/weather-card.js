// demo.weather-card: a web component served from the widget store (encoding gzip) that the model
// writes with a `city` attribute. Offline, so the forecast is made up from the city's name.
const sheet = new CSSStyleSheet();
sheet.replaceSync(`
  :host { display: block; }
  .card { display: flex; gap: .75rem; align-items: baseline; }
  .temp { font-size: 1.8rem; font-variant-numeric: tabular-nums; }
  .note { color: var(--muted, #64748b); font-size: .85rem; }
`);
const SKIES = ["Sunny", "Partly cloudy", "Cloudy", "Light rain", "Windy"];

class DemoWeatherCard extends HTMLElement {
  connectedCallback() {
    const { chatAppState, instanceId, tagId, renderingContext, attributes, data } = this.context;
    const [scope, tag] = tagId.split(".");
    const city = String(attributes.city || (typeof data === "string" && data.trim()) || "Paris");
    // The same city always gets the same made-up weather.
    const seed = [...city].reduce((sum, ch) => (sum * 31 + ch.codePointAt(0)) % 997, 7);
    const root = this.attachShadow({ mode: "open" });
    root.adoptedStyleSheets = [sheet];
    const card = document.createElement("div");
    card.className = "card";
    const temp = document.createElement("span");
    temp.className = "temp";
    temp.textContent = `${(seed % 25) + 5} °C`;
    const sky = document.createElement("span");
    sky.textContent = SKIES[seed % SKIES.length];
    card.append(temp, sky);
    const note = document.createElement("p");
    note.className = "note";
    note.textContent = "Demo data, made up offline.";
    root.append(card, note);
    chatAppState.getWidgetMetadataAPI(scope, tag, instanceId, renderingContext).setMetadata({ title: `Weather in ${city}`, lucideIconName: "cloud-sun" });
    chatAppState.signalWidgetReady(instanceId);
  }
}

if (!customElements.get("demo-weather-card")) customElements.define("demo-weather-card", DemoWeatherCard);
