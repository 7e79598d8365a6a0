// Spotlight and hero (issue 22; SPEC.md "Rendering contexts", "Hero widget display", "Spotlight
// visibility"): the two rendering contexts between the conversation and the composer. The
// spotlight is a carousel of widgets the user pins, unpins and orders (kept in the user's prefs
// under `spotlight`); the hero is one widget below it, hidden and shown by code only.
//
// installShelf({runtime, mountWidget, emit, definitions, prefs}) is called once by runtime.js; it
// defines the hero and spotlight operations and flags on runtime.api and returns {render}.

import { el } from "chat/dom";

const PREF = "spotlight"; // prefs.spotlight = {order: [tagId], unpinned: [tagId], pinned: [tagId]}
const SPOTLIGHT_DEFAULTS = { isDefault: false, displayOrder: 0, singleton: true, showInUnpinnedMenu: true, autoCreateInstance: true, startCollapsed: false };
const REGISTRATION_OPTIONS = ["displayOrder", "singleton", "showInUnpinnedMenu", "autoCreateInstance"];
const HERO_DEFAULTS = { autoCreateInstance: false, startCollapsed: false };
const SIZING_DEFAULTS = { minWidth: "200px", maxWidth: "90%", minHeight: 100, maxHeight: 600 };
const TAG_ID = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

const CHEVRON = "M6 9l6 6 6-6";
function icon(path) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const line = document.createElementNS("http://www.w3.org/2000/svg", "path");
  line.setAttribute("d", path);
  svg.append(line);
  return svg;
}

// A moved card keeps its widget connected where the browser can (Element.moveBefore); elsewhere
// the widget sees a disconnect and a connect, as for any DOM move.
function moveBefore(parent, node, reference) {
  if (node.nextSibling === reference && node.parentNode === parent) return;
  if (typeof parent.moveBefore === "function" && node.isConnected && parent.isConnected) parent.moveBefore(node, reference);
  else parent.insertBefore(node, reference);
}

// The disclosure button of a card or the hero: named "Collapse …"/"Expand …" with aria-expanded.
function collapseButton(onclick) {
  return el("button", { type: "button", class: "button button-small button-icon widget-collapse", onclick }, icon(CHEVRON));
}

function number(value, fallback) {
  const parsed = typeof value === "string" ? parseFloat(value) : value;
  return Number.isFinite(parsed) ? parsed : fallback;
}

// SPEC.md hero sizing: width/height are CSS lengths (absent: the content's size); minWidth and
// maxWidth CSS lengths, minHeight and maxHeight pixels. The browser clamps a set size to min/max.
export function heroSizing(sizing = {}) {
  const given = sizing && typeof sizing === "object" ? sizing : {};
  const length = (value, fallback) => (typeof value === "number" ? `${value}px` : typeof value === "string" && value.trim() ? value.trim() : fallback);
  return {
    width: length(given.width, null),
    height: length(given.height, null),
    minWidth: length(given.minWidth, SIZING_DEFAULTS.minWidth),
    maxWidth: length(given.maxWidth, SIZING_DEFAULTS.maxWidth),
    minHeight: `${number(given.minHeight, SIZING_DEFAULTS.minHeight)}px`,
    maxHeight: `${number(given.maxHeight, SIZING_DEFAULTS.maxHeight)}px`,
  };
}

export function installShelf({ runtime, mountWidget, emit, definitions, prefs }) {
  const api = runtime.api;
  const stored = definitions instanceof Map ? definitions : new Map();
  const entries = new Map(); // tagId -> spotlight entry (stored definition merged with a registration)
  let sequence = 0; // registration order: the last tie-breaker of the carousel order
  let saved = { order: [], unpinned: [], pinned: [] };
  let prefsLoaded = false;
  let spotlightVisible = true;
  const hero = { mounted: null, visible: false, collapsed: false, tagId: null, frame: null };

  // --- DOM: the shelf sits just above the composer ----------------------------------------------

  const shelf = el("div", { class: "shelf" });
  const toggleSpotlightButton = el(
    "button",
    {
      type: "button", class: "button button-small spotlight-toggle", "aria-expanded": "true", "aria-controls": "spotlight-track",
      onclick: () => toggleSpotlight(),
    },
    icon(CHEVRON),
    el("span", { text: "Spotlight" }),
  );
  const menuButton = el("button", {
    type: "button", class: "button button-small spotlight-menu-button", "aria-expanded": "false", "aria-controls": "spotlight-menu", text: "More widgets",
  });
  const menu = el("ul", { id: "spotlight-menu", class: "spotlight-menu", "aria-label": "Unpinned widgets", hidden: true });
  const scroller = (label, text, direction) =>
    el("button", { type: "button", class: "button button-small spotlight-scroll", "aria-label": label, text, onclick: () => scrollTrack(direction) });
  const previous = scroller("Previous widgets", "‹", -1);
  const next = scroller("Next widgets", "›", 1);
  const track = el("ul", { id: "spotlight-track", class: "spotlight-track", "aria-label": "Spotlight widgets" });
  const spotlight = el(
    "section",
    { class: "spotlight", "aria-label": "Spotlight", "data-visible": "true" },
    el(
      "div",
      { class: "spotlight-header" },
      toggleSpotlightButton,
      el("span", { class: "spotlight-menu-wrap" }, menuButton, menu),
      el("span", { class: "spotlight-scrolls" }, previous, next),
    ),
    track,
  );
  const heroHost = el("section", { class: "hero", "aria-label": "Hero", hidden: true });
  shelf.append(spotlight, heroHost);
  const composer = document.querySelector(".composer");
  if (composer) composer.before(shelf);
  else document.body.append(shelf);

  menuButton.addEventListener("click", () => setMenuOpen(menu.hidden));
  menu.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      setMenuOpen(false);
      menuButton.focus();
    }
  });
  document.addEventListener("click", (event) => {
    if (!menu.hidden && !event.target.closest(".spotlight-menu-wrap")) setMenuOpen(false);
  });
  track.addEventListener("scroll", () => refreshScrollButtons(), { passive: true });
  new ResizeObserver(() => refreshScrollButtons()).observe(track);

  function setMenuOpen(open) {
    menu.hidden = !open;
    menuButton.setAttribute("aria-expanded", String(open));
    if (open) menu.querySelector("button")?.focus();
  }

  function scrollTrack(direction) {
    track.scrollBy({ left: direction * Math.max(track.clientWidth * 0.8, 200), behavior: "smooth" });
  }

  function refreshScrollButtons() {
    const overflow = track.scrollWidth > track.clientWidth + 1;
    previous.hidden = next.hidden = !overflow || !spotlightVisible;
    previous.disabled = track.scrollLeft <= 0;
    next.disabled = track.scrollLeft + track.clientWidth >= track.scrollWidth - 1;
  }

  // --- spotlight entries: stored definitions merged with run-time registrations ------------------

  // Merge rule (docs/decisions.md): a registration's own fields win over the stored definition's
  // spotlight options; the stored definition gives the widget (kind and location) when there is
  // one, else the registration's custom element; user pinning and ordering apply to both alike.
  function entryFor(tagId) {
    const definition = stored.get(tagId);
    const storedOptions = definition?.renderingContexts?.spotlight?.enabled ? definition.renderingContexts.spotlight : null;
    const registration = entries.get(tagId)?.registration || null;
    if (!storedOptions && !registration) return null;
    const options = { ...SPOTLIGHT_DEFAULTS };
    for (const key of Object.keys(SPOTLIGHT_DEFAULTS)) if (storedOptions && storedOptions[key] !== undefined) options[key] = storedOptions[key];
    for (const key of REGISTRATION_OPTIONS) if (registration && registration[key] !== undefined) options[key] = registration[key];
    const [scope, tag] = tagId.split(".");
    const widgetDefinition = storedOptions
      ? definition
      : {
          scope, tag, status: "enabled", usageMode: "chat-app", description: registration.tagTitle,
          widget: { type: "web-component", webComponent: registration.customElementName ? { customElementName: registration.customElementName } : {} },
          renderingContexts: { spotlight: { enabled: true, ...options } }, registered: true,
        };
    const metadata = { title: registration?.tagTitle || definition?.description || tag, ...(registration?.metadata || {}) };
    const sizing = registration?.sizing || storedOptions?.sizing || null;
    return { tagId, options, definition: widgetDefinition, metadata, registration, sizing };
  }

  function refreshEntry(tagId) {
    const previousEntry = entries.get(tagId);
    const entry = entryFor(tagId);
    if (!entry) return null;
    entry.instances = previousEntry?.instances || [];
    entry.sequence = previousEntry?.sequence ?? sequence++;
    entries.set(tagId, entry);
    return entry;
  }

  // Carousel order: the user's saved order first (tags they never ordered after them), then
  // `isDefault`, `displayOrder` (lower first), then registration order.
  function ordered() {
    const byDefault = [...entries.values()].sort(
      (a, b) =>
        Number(!!b.options.isDefault) - Number(!!a.options.isDefault) ||
        number(a.options.displayOrder, 0) - number(b.options.displayOrder, 0) ||
        a.sequence - b.sequence,
    );
    const rank = new Map(saved.order.map((tagId, index) => [tagId, index]));
    return byDefault
      .map((entry, index) => ({ entry, key: rank.has(entry.tagId) ? rank.get(entry.tagId) : saved.order.length + index }))
      .sort((a, b) => a.key - b.key)
      .map(({ entry }) => entry);
  }

  const isUnpinned = (entry) => saved.unpinned.includes(entry.tagId);
  // Shown at load: pinned (never unpinned) and auto-created, or added by the user from the menu.
  const wantsInstance = (entry) => !isUnpinned(entry) && (entry.options.autoCreateInstance !== false || saved.pinned.includes(entry.tagId));

  function mountSpotlight(entry, data = null, metadata = null) {
    const card = el("li", { class: "spotlight-card", "data-tag-id": entry.tagId });
    sizeCard(card, entry.sizing);
    const mounted = mountWidget({
      tagId: entry.tagId, renderingContext: "spotlight", data, attributes: {}, host: card, definition: entry.definition,
      metadata: { ...entry.metadata, ...(metadata || {}) },
    });
    const instance = runtime.instances?.get(mounted.instanceId);
    const record = { mounted, card, collapsed: !!entry.options.startCollapsed, instance };
    card.dataset.instanceId = mounted.instanceId;
    // By tag id: a registration replaces the entry object, the card stays.
    const current = () => entries.get(entry.tagId);
    const collapse = collapseButton(() => setCardCollapsed(record, !record.collapsed));
    const earlier = el("button", { type: "button", class: "button button-small button-icon", text: "←", onclick: () => move(current(), -1) });
    const later = el("button", { type: "button", class: "button button-small button-icon", text: "→", onclick: () => move(current(), 1) });
    const unpin = el("button", { type: "button", class: "button button-small button-icon", text: "×", onclick: () => unpinEntry(current()) });
    record.buttons = { collapse, earlier, later, unpin };
    if (instance) {
      instance.chrome.always = true;
      instance.chrome.tools.append(collapse, earlier, later, unpin);
      instance.chrome.refreshVisibility();
      record.onMetadata = () => labelCard(record);
      instance.onMetadata.add(record.onMetadata);
    }
    entry.instances.push(record);
    setCardCollapsed(record, record.collapsed, { quiet: true });
    return record;
  }

  // A registration's `sizing` (SPEC.md hero sizing's fields): only what it sets; the card's CSS
  // gives the rest. Heights bound the widget's area under its bar, as in the hero.
  function sizeCard(card, sizing) {
    if (!sizing || typeof sizing !== "object") return;
    const length = (value) => (typeof value === "number" ? `${value}px` : typeof value === "string" && value.trim() ? value.trim() : null);
    const set = (property, value) => value && card.style.setProperty(property, value);
    set("width", length(sizing.width));
    set("min-width", length(sizing.minWidth));
    set("max-width", length(sizing.maxWidth));
    set("--card-height", length(sizing.height));
    set("--card-min-height", length(sizing.minHeight));
    set("--card-max-height", length(sizing.maxHeight));
  }

  function titleOf(record, entry) {
    return record.instance?.metadata?.title || entry?.metadata.title || record.mounted.instanceId;
  }

  function labelCard(record) {
    const entry = entries.get(record.card.dataset.tagId);
    const title = titleOf(record, entry);
    record.card.setAttribute("aria-label", title);
    const { collapse, earlier, later, unpin } = record.buttons;
    collapse.setAttribute("aria-label", `${record.collapsed ? "Expand" : "Collapse"} ${title}`);
    earlier.setAttribute("aria-label", `Move ${title} earlier`);
    later.setAttribute("aria-label", `Move ${title} later`);
    unpin.setAttribute("aria-label", `Unpin ${title}`);
    for (const button of [collapse, earlier, later, unpin]) button.title = button.getAttribute("aria-label");
  }

  function setCardCollapsed(record, collapsed, { quiet = false } = {}) {
    record.collapsed = collapsed;
    record.card.dataset.collapsed = String(collapsed);
    record.buttons.collapse.setAttribute("aria-expanded", String(!collapsed));
    // Collapsed shows the widget's bar only; the widget stays mounted.
    const body = record.mounted.element.querySelector(":scope > .widget-body");
    if (body) {
      if (collapsed && body.contains(document.activeElement)) record.buttons.collapse.focus();
      body.hidden = collapsed;
    }
    labelCard(record);
    if (!quiet) refreshScrollButtons();
  }

  function destroyRecord(entry, record) {
    record.instance?.onMetadata.delete(record.onMetadata);
    record.mounted.destroy();
    record.card.remove();
    const index = entry.instances.indexOf(record);
    if (index >= 0) entry.instances.splice(index, 1); // in place: the array is shared across entry refreshes
  }

  function renderSpotlight() {
    const list = ordered();
    let reference = track.firstChild;
    const shown = [];
    for (const entry of list) {
      for (const record of entry.instances) {
        if (record.card.parentNode !== track) track.insertBefore(record.card, reference);
        else moveBefore(track, record.card, reference);
        reference = record.card.nextSibling;
        shown.push(record);
      }
    }
    shown.forEach((record, index) => {
      record.buttons.earlier.disabled = index === 0;
      record.buttons.later.disabled = index === shown.length - 1;
    });
    const offered = list.filter((entry) => entry.instances.length === 0 && entry.options.showInUnpinnedMenu !== false);
    menu.replaceChildren(
      ...offered.map((entry) =>
        el(
          "li",
          {},
          el("button", {
            type: "button", class: "button button-small button-wide", "data-tag-id": entry.tagId, text: `Pin ${entry.metadata.title}`,
            onclick: () => pinEntry(entries.get(entry.tagId)),
          }),
        ),
      ),
    );
    menuButton.hidden = offered.length === 0;
    if (menuButton.hidden) setMenuOpen(false);
    // Nothing is shown before the person's prefs are in: no card that their unpinning would remove.
    spotlight.hidden = !prefsLoaded || (shown.length === 0 && offered.length === 0);
    spotlight.dataset.count = String(shown.length);
    refreshScrollButtons();
  }

  function savePrefs() {
    if (!prefs?.save) return Promise.resolve();
    const value = { order: saved.order, unpinned: saved.unpinned, pinned: saved.pinned };
    return prefs.save({ [PREF]: value }).catch((error) => console.error("chatRuntime: the spotlight's prefs were not saved", error));
  }

  function move(entry, direction) {
    const list = ordered().filter((item) => item.instances.length > 0);
    const index = list.indexOf(entry);
    const target = index + direction;
    if (index < 0 || target < 0 || target >= list.length) return;
    // The whole order is saved (shown and not), so a tag the user placed keeps its place.
    const all = ordered();
    const from = all.indexOf(entry);
    const to = all.indexOf(list[target]);
    all.splice(from, 1);
    all.splice(to, 0, entry);
    saved.order = all.map((item) => item.tagId);
    renderSpotlight();
    entry.instances[0]?.buttons[direction < 0 ? "earlier" : "later"].focus();
    savePrefs();
  }

  function unpinEntry(entry) {
    for (const record of [...entry.instances]) destroyRecord(entry, record);
    saved.unpinned = [...new Set([...saved.unpinned, entry.tagId])];
    saved.pinned = saved.pinned.filter((tagId) => tagId !== entry.tagId);
    renderSpotlight();
    (menuButton.hidden ? toggleSpotlightButton : menuButton).focus();
    savePrefs();
  }

  function pinEntry(entry) {
    saved.unpinned = saved.unpinned.filter((tagId) => tagId !== entry.tagId);
    if (entry.options.autoCreateInstance === false) saved.pinned = [...new Set([...saved.pinned, entry.tagId])];
    // What the person adds goes at the end of the carousel.
    saved.order = [...ordered().filter((item) => item !== entry), entry].map((item) => item.tagId);
    const record = entry.instances[0] || mountSpotlight(entry);
    setMenuOpen(false);
    renderSpotlight();
    record.buttons.collapse.focus();
    record.card.scrollIntoView({ block: "nearest", inline: "nearest" });
    savePrefs();
  }

  function createWanted() {
    for (const entry of ordered()) if (entry.instances.length === 0 && wantsInstance(entry)) mountSpotlight(entry);
    renderSpotlight();
  }

  function renderSpotlightTag(tagId, data, metadata) {
    const entry = entries.get(tagId) || refreshEntry(tagId);
    if (!entry) throw new Error(`${tagId} does not render in spotlight`);
    // singleton: a new render replaces the instance in its place; otherwise it adds one more.
    const old = entry.options.singleton !== false ? entry.instances[0] : null;
    const record = mountSpotlight(entry, data ?? null, metadata);
    if (old) {
      old.card.after(record.card);
      destroyRecord(entry, old);
    }
    renderSpotlight();
    return record.mounted.instanceId;
  }

  function setSpotlightVisible(visible) {
    if (visible === spotlightVisible) return false;
    if (!visible && track.contains(document.activeElement)) toggleSpotlightButton.focus(); // focus is not lost with the cards
    spotlightVisible = visible;
    spotlight.dataset.visible = String(visible);
    track.hidden = !visible;
    toggleSpotlightButton.setAttribute("aria-expanded", String(visible));
    refreshScrollButtons();
    emit(visible ? "spotlightShow" : "spotlightHide", {});
    return true;
  }

  function registerSpotlightWidget(registration) {
    const given = registration || {};
    for (const field of ["tag", "scope", "tagTitle"]) {
      if (typeof given[field] !== "string" || !given[field]) throw new TypeError(`manuallyRegisterSpotlightWidget needs ${field} (a string)`);
    }
    const tagId = `${given.scope}.${given.tag}`;
    if (!TAG_ID.test(tagId)) throw new TypeError(`manuallyRegisterSpotlightWidget: ${tagId} is not a valid scope.tag`);
    const existing = entries.get(tagId);
    entries.set(tagId, { ...(existing || { instances: [], sequence: sequence++ }), registration: { ...given } });
    const entry = refreshEntry(tagId);
    // A shown card takes the registration's title (the widget may set its own later).
    for (const record of entry.instances) if (record.instance && runtime.setMetadata) runtime.setMetadata(record.instance, { title: entry.metadata.title });
    if (prefsLoaded && entry.instances.length === 0 && wantsInstance(entry)) mountSpotlight(entry);
    renderSpotlight();
    return tagId;
  }

  // --- hero -------------------------------------------------------------------------------------

  const heroOptions = (tagId) => {
    const options = stored.get(tagId)?.renderingContexts?.hero;
    return options?.enabled ? { ...HERO_DEFAULTS, ...options } : null;
  };

  function heroTitle() {
    const instance = runtime.instances?.get(hero.mounted?.instanceId);
    return instance?.metadata?.title || stored.get(hero.tagId)?.description || hero.tagId || "Hero";
  }

  function labelHero() {
    if (!hero.mounted) return;
    const title = heroTitle();
    heroHost.setAttribute("aria-label", title);
    hero.collapseButton.setAttribute("aria-label", `${hero.collapsed ? "Expand" : "Collapse"} ${title}`);
    hero.collapseButton.title = hero.collapseButton.getAttribute("aria-label");
  }

  function applyHeroState() {
    // Focus inside what is about to disappear goes to what stays: the bar, else the message box.
    if (!hero.visible && heroHost.contains(document.activeElement)) document.getElementById("prompt")?.focus();
    heroHost.hidden = !hero.visible;
    heroHost.dataset.collapsed = String(hero.collapsed);
    if (!hero.mounted) return;
    hero.collapseButton.setAttribute("aria-expanded", String(!hero.collapsed));
    const body = hero.mounted.element.querySelector(":scope > .widget-body");
    // Collapsed: the header bar only; the widget stays connected (a hidden body, not a removed one).
    if (body) {
      if (hero.collapsed && body.contains(document.activeElement)) hero.collapseButton.focus();
      body.hidden = hero.collapsed;
    }
    labelHero();
  }

  function mountHero(tagId, data, metadata) {
    const options = heroOptions(tagId);
    if (!options) throw new Error(`${tagId} does not render in hero`);
    // Singleton: a new hero replaces the old one where it is (visible stays visible, no events).
    const wasVisible = hero.visible;
    if (hero.mounted) destroyHero();
    const sizing = heroSizing(options.sizing);
    const frameHost = el("div", { class: "hero-frame" });
    // Width bounds apply to the whole hero (centered); height bounds to the widget's area, under
    // its header bar. A set size is clamped by the browser (min/max win over width/height).
    if (sizing.width) frameHost.style.setProperty("width", sizing.width);
    frameHost.style.setProperty("min-width", sizing.minWidth);
    frameHost.style.setProperty("max-width", sizing.maxWidth);
    if (sizing.height) frameHost.style.setProperty("--hero-height", sizing.height);
    frameHost.style.setProperty("--hero-min-height", sizing.minHeight);
    frameHost.style.setProperty("--hero-max-height", sizing.maxHeight);
    heroHost.replaceChildren(frameHost);
    hero.tagId = tagId;
    hero.collapsed = !!options.startCollapsed;
    hero.visible = wasVisible;
    hero.mounted = mountWidget({
      tagId, renderingContext: "hero", data: data ?? null, attributes: {}, host: frameHost,
      metadata: { title: stored.get(tagId)?.description || tagId, ...(metadata || {}) },
    });
    hero.frame = frameHost;
    hero.collapseButton = collapseButton(() => toggleHeroCollapsed());
    const instance = runtime.instances?.get(hero.mounted.instanceId);
    if (instance) {
      instance.chrome.always = true;
      instance.chrome.tools.append(hero.collapseButton);
      instance.chrome.refreshVisibility();
      hero.onMetadata = () => labelHero();
      instance.onMetadata.add(hero.onMetadata);
    }
    applyHeroState();
    return hero.mounted.instanceId;
  }

  function destroyHero() {
    const mounted = hero.mounted;
    runtime.instances?.get(mounted.instanceId)?.onMetadata.delete(hero.onMetadata);
    Object.assign(hero, { mounted: null, visible: false, collapsed: false, tagId: null, frame: null, collapseButton: null, onMetadata: null });
    mounted.destroy();
    heroHost.replaceChildren();
    applyHeroState();
  }

  function showHero() {
    if (!hero.mounted) {
      // No instance yet: the chat app's hero widget is created on demand (autoCreateInstance false).
      const tagId = [...stored.keys()].find((id) => heroOptions(id));
      if (!tagId) return false;
      mountHero(tagId, null, null);
    }
    if (hero.visible) return false;
    emit("heroWillShow", {});
    hero.visible = true;
    applyHeroState();
    emit("heroDidShow", {});
    return true;
  }

  function hideHero() {
    if (!hero.mounted || !hero.visible) return false;
    emit("heroWillHide", {});
    hero.visible = false;
    applyHeroState();
    emit("heroDidHide", {});
    return true;
  }

  function setHeroCollapsed(collapsed) {
    if (!hero.mounted || hero.collapsed === collapsed) return false;
    hero.collapsed = collapsed;
    applyHeroState();
    emit(collapsed ? "heroCollapse" : "heroExpand", {});
    return true;
  }

  function toggleHeroCollapsed() {
    return setHeroCollapsed(!hero.collapsed);
  }

  function closeHero() {
    if (!hero.mounted) return false;
    destroyHero();
    return true;
  }

  function renderHeroTag(tagId, data, metadata) {
    const instanceId = mountHero(tagId, data, metadata);
    showHero();
    return instanceId;
  }

  // --- the API ------------------------------------------------------------------------------------

  Object.defineProperties(api, {
    heroVisible: { get: () => hero.visible, enumerable: true },
    heroCollapsed: { get: () => hero.collapsed, enumerable: true },
    spotlightVisible: { get: () => spotlightVisible, enumerable: true },
  });
  Object.assign(api, {
    showHero,
    hideHero,
    closeHero,
    collapseHero: () => setHeroCollapsed(true),
    expandHero: () => setHeroCollapsed(false),
    toggleHeroCollapsed,
    showSpotlight: () => setSpotlightVisible(true),
    hideSpotlight: () => setSpotlightVisible(false),
    toggleSpotlight,
    manuallyRegisterSpotlightWidget: registerSpotlightWidget,
  });
  function toggleSpotlight() {
    return setSpotlightVisible(!spotlightVisible);
  }

  for (const tagId of stored.keys()) refreshEntry(tagId);
  renderSpotlight();
  const loading = (prefs?.get ? prefs.get() : Promise.resolve({}))
    .catch(() => ({}))
    .then((all) => {
      const value = all && typeof all[PREF] === "object" && all[PREF] ? all[PREF] : {};
      const list = (key) => (Array.isArray(value[key]) ? value[key].filter((item) => typeof item === "string") : []);
      saved = { order: list("order"), unpinned: list("unpinned"), pinned: list("pinned") };
      prefsLoaded = true;
      createWanted();
      const heroTag = [...stored.keys()].find((id) => heroOptions(id)?.autoCreateInstance);
      if (heroTag && !hero.mounted) renderHeroTag(heroTag, null, null);
    });

  return {
    ready: loading,
    render(renderingContext, tagId, dataOrOptions, metadata) {
      if (renderingContext === "hero") return renderHeroTag(tagId, dataOrOptions, metadata);
      if (renderingContext === "spotlight") return renderSpotlightTag(tagId, dataOrOptions, metadata);
      return null;
    },
  };
}
