// A web component kept in the widget store (tests/pages/test_widgets.py), defined under its
// tag's name (the last part of the address it is served at): one script, stored per encoding.
const name = new URL(import.meta.url).pathname.split("/").pop();
customElements.define(name, class extends HTMLElement {
  connectedCallback() {
    this.textContent = `from the store (${name}): ${this.context.data}`;
  }
});
