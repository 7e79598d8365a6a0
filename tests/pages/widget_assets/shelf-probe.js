// The test widget of tests/pages/test_widgets_shelf.py, served from the widget store: it shows its
// tag, rendering context and data (`label`; `lines` for a tall one) and counts its connections
// and moves (a hero hidden and shown again, a card reordered, must never be disconnected).
if (!customElements.get("shelf-probe")) {
  customElements.define("shelf-probe", class extends HTMLElement {
    // Called instead of disconnect + connect when the page moves it with Element.moveBefore.
    connectedMoveCallback() {
      this.moves = (this.moves || 0) + 1;
    }

    connectedCallback() {
      this.connections = (this.connections || 0) + 1;
      if (this.drawn) return;
      this.drawn = true;
      const context = this.context || {};
      const data = context.data && typeof context.data === "object" ? context.data : {};
      const lines = Number(data.lines) || 1;
      for (let index = 0; index < lines; index += 1) {
        const line = document.createElement("p");
        line.style.margin = "0 0 4px";
        const label = data.label ? `: ${data.label}` : "";
        line.textContent = index === 0 ? `${context.tagId} in ${context.renderingContext}${label}` : `line ${index + 1}`;
        this.append(line);
      }
      if (context.renderingContext === "hero") {
        // As a hero is advised to: refresh on heroDidShow, stop on heroDidHide (counted here).
        this.heard = {};
        for (const name of ["heroDidShow", "heroDidHide"]) {
          context.chatAppState.addEventListener(name, () => (this.heard[name] = (this.heard[name] || 0) + 1), context.instanceId);
        }
      }
      this.dataset.tagId = context.tagId;
      this.dataset.renderingContext = context.renderingContext;
    }
  });
}
