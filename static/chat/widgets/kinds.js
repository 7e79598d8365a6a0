// The widget kinds (docs/widgets.md, "Widget kinds"): built-in (chart, image, prompt),
// custom-compiled-in, web-component and pass-through. Each loader puts the widget into `body` and
// answers {element, unload}. What a tag carries (attributes, body) is data: text content,
// properties, chart numbers; never markup parsed into the page.
//
// `services`: what the kinds need of the page: {renderers, webComponentScripts} (the page's
// `config.widgets`), sendMessage(text) and suggestQuestion(text, options) for the prompt widget.

const DEFINE_TIMEOUT_MS = 8000;

// The default element name: "<scope>-<tag>", lower case, "_" as "-", with an "x-" prefix when it
// would not start with a letter (custom element names must).
export function defaultElementName(scope, tag) {
  const name = `${scope}-${tag}`.toLowerCase().replace(/_/g, "-");
  return /^[a-z]/.test(name) ? name : `x-${name}`;
}

function paragraph(text, className = "widget-note") {
  const node = document.createElement("p");
  node.className = className;
  node.textContent = text;
  return node;
}

// Whether a boolean-ish attribute or option is off ("false", "0", "no", false).
function off(value) {
  return value === false || (typeof value === "string" && /^(false|0|no|off)$/i.test(value.trim()));
}

function field(context, ...names) {
  for (const name of names) {
    if (context.attributes[name] !== undefined && context.attributes[name] !== "") return context.attributes[name];
    if (context.data && typeof context.data === "object" && context.data[name] !== undefined) return context.data[name];
  }
  return undefined;
}

// --- built-in ---------------------------------------------------------------------------------

let chartCss = false;

function ensureChartCss() {
  if (chartCss) return;
  chartCss = true;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = import.meta.resolve("vendor/uplot-css");
  document.head.append(link);
}

// The chart body is JSON: {type: "line"|"bar", title?, labels: [x...], series: [{label, data: [y...]}]}
// (a lone `data` list with `labels` is one series).
function chartSpec(context) {
  const spec = context.data;
  if (typeof spec === "string") throw new Error("the chart's body is not JSON");
  if (!spec || typeof spec !== "object") throw new Error("the chart has no data");
  const series = Array.isArray(spec.series) ? spec.series : Array.isArray(spec.data) ? [{ label: spec.label || "", data: spec.data }] : [];
  if (!series.length) throw new Error("the chart has no series");
  const length = Math.max(...series.map((item) => (Array.isArray(item.data) ? item.data.length : 0)));
  const labels = Array.isArray(spec.labels) ? spec.labels.slice(0, length) : [];
  const numeric = labels.length === length && labels.every((value) => typeof value === "number");
  return {
    type: (context.attributes.type || spec.type || "line") === "bar" ? "bar" : "line",
    title: String(context.attributes.title || spec.title || ""),
    xs: Array.from({ length }, (_, index) => (numeric ? labels[index] : index)),
    labels: numeric ? null : labels.map(String),
    series: series.map((item, index) => ({
      label: String(item.label ?? `Series ${index + 1}`),
      data: Array.from({ length }, (_, at) => {
        const value = Number(item.data?.[at]);
        return Number.isFinite(value) ? value : null;
      }),
    })),
  };
}

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2"];

async function chart(context, body) {
  const spec = chartSpec(context);
  const { default: uPlot } = await import("uplot");
  ensureChartCss();
  const figure = document.createElement("figure");
  figure.className = "widget-chart";
  figure.setAttribute("role", "img");
  figure.setAttribute("aria-label", spec.title || `Chart of ${spec.series.map((item) => item.label).join(", ")}`);
  body.append(figure);
  const bars = spec.type === "bar" ? uPlot.paths.bars({ size: [0.6, 64] }) : undefined;
  const ink = getComputedStyle(body).color;
  const grid = ink.replace(/^rgba?\(([^,]+),([^,]+),([^,)]+).*$/, "rgba($1,$2,$3, 0.15)");
  const options = {
    title: spec.title || undefined,
    width: Math.max(240, Math.floor(body.clientWidth || 480)),
    height: 240,
    legend: { show: spec.series.length > 1 },
    scales: {
      x: {
        time: false,
        range: bars || spec.labels ? () => [spec.xs[0] - (bars ? 0.5 : 0), spec.xs[spec.xs.length - 1] + (bars ? 0.5 : 0)] : undefined,
      },
      // Bars grow from zero; lines take their data's range.
      y: bars ? { range: (_, min, max) => [Math.min(0, min), Math.max(0, max) * 1.1 || 1] } : {},
    },
    // The canvas does not inherit CSS: the axes take the page's text colour, light or dark theme alike.
    axes: [
      spec.labels ? { splits: () => spec.xs, values: (_, ticks) => ticks.map((tick) => spec.labels[tick] ?? ""), space: 30 } : {},
      {},
    ].map((axis) => ({ ...axis, stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid } })),
    series: [
      { label: "x", value: spec.labels ? (_, value) => spec.labels[value] ?? value : undefined },
      ...spec.series.map((item, index) => ({
        label: item.label,
        stroke: PALETTE[index % PALETTE.length],
        fill: bars ? `${PALETTE[index % PALETTE.length]}99` : undefined,
        width: 2,
        paths: bars,
        points: { show: !bars },
      })),
    ],
  };
  const plot = new uPlot(options, [spec.xs, ...spec.series.map((item) => item.data)], figure);
  const resize = new ResizeObserver(() => {
    const width = Math.floor(body.clientWidth);
    if (width > 0 && Math.abs(width - plot.width) > 2) plot.setSize({ width: Math.max(240, width), height: 240 });
  });
  resize.observe(body);
  return {
    element: figure,
    unload: () => {
      resize.disconnect();
      plot.destroy();
    },
  };
}

// Images from this origin, data: and blob: images, or http(s) addresses (the page's img-src
// policy decides which load); never javascript: or anything else.
function safeImageUrl(value) {
  if (typeof value !== "string" || !value.trim()) return null;
  let url;
  try {
    url = new URL(value.trim(), location.href);
  } catch {
    return null;
  }
  if (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "blob:") return url.href;
  if (url.protocol === "data:" && /^data:image\/(png|jpe?g|gif|webp|avif)[;,]/i.test(url.href)) return url.href;
  return null;
}

function image(context, body) {
  const source = field(context, "src", "url") ?? (typeof context.data === "string" ? context.data.trim() : undefined);
  const src = safeImageUrl(source);
  if (!src) throw new Error("the image has no usable address");
  const figure = document.createElement("figure");
  figure.className = "widget-image";
  const img = document.createElement("img");
  img.alt = String(field(context, "alt", "title") ?? "");
  img.decoding = "async";
  img.loading = "lazy";
  img.src = src;
  figure.append(img);
  const caption = field(context, "caption");
  if (caption) {
    const figcaption = document.createElement("figcaption");
    figcaption.textContent = String(caption);
    figure.append(figcaption);
  }
  body.append(figure);
  return { element: figure };
}

// A suggestion the user clicks: sent at once, or (mode="suggest") put in the message box through
// suggestQuestion with the tag's focus / highlight / expandChatPane options.
function prompt(context, body, services) {
  const text = String(field(context, "text", "prompt", "question") ?? (typeof context.data === "string" ? context.data : "")).trim();
  if (!text) throw new Error("the prompt has no text");
  const node = document.createElement("button");
  node.type = "button";
  node.className = "button widget-prompt";
  node.textContent = String(field(context, "label") ?? text);
  const mode = String(field(context, "mode") ?? "send");
  node.dataset.mode = mode === "suggest" ? "suggest" : "send";
  node.addEventListener("click", () => {
    if (node.dataset.mode === "suggest") {
      services.suggestQuestion(text, {
        focus: !off(field(context, "focus")),
        highlight: !off(field(context, "highlight")),
        expandChatPane: !off(field(context, "expandChatPane")),
      });
    } else {
      services.sendMessage(text);
    }
  });
  body.append(node);
  return { element: node };
}

// --- elements (custom renderers and web components) ---------------------------------------------

async function whenDefined(name) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no element <${name}> was defined`)), DEFINE_TIMEOUT_MS);
  });
  try {
    await Promise.race([customElements.whenDefined(name), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// The element has its `context` before it is connected (docs/widgets.md, "The context property").
function connect(element, context, body) {
  element.context = context;
  element.dataset.instanceId = context.instanceId;
  body.append(element);
  return { element, unload: () => element.remove() };
}

// A deployment's own renderers: page config `widgets.renderers` maps a tag id to an ES module.
// Its default export is a custom element class (defined under the default name when free), or a
// function (context) -> Element.
async function custom(context, body, services, definition) {
  const renderers = services.renderers || {};
  const url = renderers[context.tagId];
  if (!url) throw new Error("no renderer is registered for this tag");
  const module = await import(new URL(url, location.href).href);
  const exported = module.default || module.render;
  if (typeof exported !== "function") throw new Error("the renderer module exports nothing to render with");
  if (exported.prototype instanceof HTMLElement) {
    const name = definition.widget?.customElementName || defaultElementName(definition.scope, definition.tag);
    if (!customElements.get(name)) customElements.define(name, exported);
    return connect(document.createElement(name), context, body);
  }
  const element = await exported(context);
  if (!(element instanceof Element)) throw new Error("the renderer returned no element");
  return connect(element, context, body);
}

export function webComponentUrl(definition, scripts = {}) {
  const known = scripts[`${definition.scope}.${definition.tag}`];
  if (known) return new URL(known, location.href).href;
  const component = definition.widget?.webComponent || {};
  if (component.url) return new URL(component.url, location.href).href;
  const store = component.store || component;
  if (store.storeBucket || store.storeKey)
    return `/api/chat/webcomponent/${encodeURIComponent(definition.scope)}/${encodeURIComponent(definition.tag)}`;
  return null;
}

async function webComponent(context, body, services, definition) {
  const component = definition.widget?.webComponent || {};
  const name = component.customElementName || defaultElementName(definition.scope, definition.tag);
  if (!customElements.get(name)) {
    const url = webComponentUrl(definition, services.webComponentScripts);
    if (url) {
      try {
        await import(url);
      } catch {
        throw new Error(`its script did not load from ${url}`);
      }
    }
    await whenDefined(name);
  }
  return connect(document.createElement(name), context, body);
}

export async function loadWidget({ definition, context, body, frame, services }) {
  const widget = definition.widget || {};
  if (widget.type === "pass-through") {
    frame.hidden = true;
    return { element: null };
  }
  if (widget.type === "built-in") {
    if (widget.builtInType === "chart") return chart(context, body);
    if (widget.builtInType === "image") return image(context, body);
    if (widget.builtInType === "prompt") return prompt(context, body, services);
    throw new Error(`unknown built-in widget ${widget.builtInType}`);
  }
  if (widget.type === "custom-compiled-in") return custom(context, body, services, definition);
  if (widget.type === "web-component") return webComponent(context, body, services, definition);
  body.append(paragraph(`Unknown widget type ${widget.type}.`));
  return { element: null };
}
