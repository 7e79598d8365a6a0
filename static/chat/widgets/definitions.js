// The tag definitions the page may render (docs/widgets.md, "What the page knows (server → browser)"), each with its
// rendering contexts in one shape, and the rule for which tags of an answer become widgets.

export const CONTEXTS = ["inline", "canvas", "dialog", "spotlight", "static", "hero"];

// A definition's rendering contexts come as a boolean or as {enabled, ...options}: one shape from here on.
function normaliseContexts(contexts) {
  const out = {};
  for (const name of CONTEXTS) {
    const value = contexts ? contexts[name] : undefined;
    if (value === true) out[name] = { enabled: true };
    else if (value && typeof value === "object") out[name] = { ...value, enabled: value.enabled !== false };
    else out[name] = { enabled: false };
  }
  return out;
}

function normaliseDefinition(definition) {
  return { ...definition, renderingContexts: normaliseContexts(definition.renderingContexts) };
}

// A canvas or dialog request for a tag with no definition gets a minimal one (docs/widgets.md,
// "window.chatRuntime"): a web component of the default name.
function minimalDefinition(tagId, renderingContext) {
  const [scope, tag] = tagId.split(".");
  return normaliseDefinition({
    scope,
    tag,
    usageMode: "chat-app",
    status: "enabled",
    widget: { type: "web-component", webComponent: {} },
    renderingContexts: { [renderingContext]: { enabled: true } },
    canBeGeneratedByLlm: false,
    canBeGeneratedByTool: false,
    description: tagId,
    generated: true,
  });
}

export class Definitions {
  constructor(list) {
    this.byTag = new Map(list.map((definition) => [`${definition.scope}.${definition.tag}`, normaliseDefinition(definition)]));
  }

  get(tagId) {
    return this.byTag.get(tagId) || null;
  }

  tagIds() {
    return [...this.byTag.keys()];
  }

  // The definition a render request in `renderingContext` uses, generated for a canvas or a dialog.
  forRender(tagId, renderingContext) {
    let definition = this.get(tagId);
    if (!definition && (renderingContext === "canvas" || renderingContext === "dialog")) {
      definition = minimalDefinition(tagId, renderingContext);
      this.byTag.set(tagId, definition);
    }
    return definition;
  }

  // A tag written in an answer becomes a widget only when this chat app may use it (the page lists
  // only those), and its definition lets its source ("model" or "tool") write it.
  accepts(tagId, source) {
    const definition = this.get(tagId);
    if (!definition || definition.generated || (definition.status && definition.status !== "enabled")) return false;
    return source === "tool" ? definition.canBeGeneratedByTool === true : definition.canBeGeneratedByLlm === true;
  }

  // The chart library is worth loading ahead only if a chart may come.
  hasChart() {
    return [...this.byTag.values()].some((definition) => definition.widget?.builtInType === "chart");
  }
}
