// A custom-compiled-in renderer for tests: a function of the context that answers an element.
export default function render(context) {
  const node = document.createElement("div");
  node.className = "custom-rendered";
  node.textContent = `custom ${context.renderingContext} ${typeof context.data === "string" ? context.data : JSON.stringify(context.data)}`;
  window.__customContext = { connected: node.isConnected, tagId: context.tagId };
  return node;
}
