// What the spotlight offers, and in which order (docs/widgets.md, "window.chatRuntime"): an entry
// per tag, from the stored definition with a `spotlight` context merged with a registration at
// run time (manuallyRegisterSpotlightWidget); and the person's pinning and order, kept in their
// prefs under `spotlight`: {order: [tagId], unpinned: [tagId], pinned: [tagId]}.

const PREF = "spotlight";
const DEFAULTS = {
  isDefault: false,
  displayOrder: 0,
  singleton: true,
  showInUnpinnedMenu: true,
  autoCreateInstance: true,
  startCollapsed: false,
};
const REGISTRATION_OPTIONS = ["displayOrder", "singleton", "showInUnpinnedMenu", "autoCreateInstance"];
const TAG_ID = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

function number(value, fallback) {
  const parsed = typeof value === "string" ? parseFloat(value) : value;
  return Number.isFinite(parsed) ? parsed : fallback;
}

export class SpotlightEntries {
  constructor(definitions) {
    this.definitions = definitions;
    this.byTag = new Map(); // tagId -> entry: {tagId, options, definition, metadata, registration, sizing, cards, sequence}
    this.sequence = 0; // registration order: the last tie-breaker of the carousel order
    this.saved = { order: [], unpinned: [], pinned: [] };
    for (const tagId of definitions.tagIds()) this.refresh(tagId);
  }

  // The person's pinning and order, from their prefs as the page was served with them.
  load(prefs) {
    const value = prefs && typeof prefs[PREF] === "object" && prefs[PREF] ? prefs[PREF] : {};
    const list = (key) => (Array.isArray(value[key]) ? value[key].filter((item) => typeof item === "string") : []);
    this.saved = { order: list("order"), unpinned: list("unpinned"), pinned: list("pinned") };
  }

  // What to store in the person's prefs.
  get prefs() {
    const { order, unpinned, pinned } = this.saved;
    return { [PREF]: { order, unpinned, pinned } };
  }

  get(tagId) {
    return this.byTag.get(tagId) || null;
  }

  // Merge rule (docs/decisions.md): a registration's own fields win over the stored definition's
  // spotlight options; the stored definition gives the widget (kind and location) when there is
  // one, else the registration's custom element; the person's pinning and order apply to both.
  merged(tagId) {
    const definition = this.definitions.get(tagId);
    const storedOptions = definition?.renderingContexts?.spotlight?.enabled ? definition.renderingContexts.spotlight : null;
    const registration = this.byTag.get(tagId)?.registration || null;
    if (!storedOptions && !registration) return null;
    const options = { ...DEFAULTS };
    for (const key of Object.keys(DEFAULTS)) if (storedOptions && storedOptions[key] !== undefined) options[key] = storedOptions[key];
    for (const key of REGISTRATION_OPTIONS) if (registration && registration[key] !== undefined) options[key] = registration[key];
    const [scope, tag] = tagId.split(".");
    const widgetDefinition = storedOptions
      ? definition
      : {
          scope,
          tag,
          status: "enabled",
          usageMode: "chat-app",
          description: registration.tagTitle,
          widget: {
            type: "web-component",
            webComponent: registration.customElementName ? { customElementName: registration.customElementName } : {},
          },
          renderingContexts: { spotlight: { enabled: true, ...options } },
          registered: true,
        };
    const metadata = { title: registration?.tagTitle || definition?.description || tag, ...(registration?.metadata || {}) };
    const sizing = registration?.sizing || storedOptions?.sizing || null;
    return { tagId, options, definition: widgetDefinition, metadata, registration, sizing };
  }

  // The tag's entry, merged again; its cards and its place in the registration order stay.
  refresh(tagId) {
    const previous = this.byTag.get(tagId);
    const entry = this.merged(tagId);
    if (!entry) return null;
    entry.cards = previous?.cards || [];
    entry.sequence = previous?.sequence ?? this.sequence++;
    this.byTag.set(tagId, entry);
    return entry;
  }

  register(registration) {
    const given = registration || {};
    for (const field of ["tag", "scope", "tagTitle"]) {
      if (typeof given[field] !== "string" || !given[field])
        throw new TypeError(`manuallyRegisterSpotlightWidget needs ${field} (a string)`);
    }
    const tagId = `${given.scope}.${given.tag}`;
    if (!TAG_ID.test(tagId)) throw new TypeError(`manuallyRegisterSpotlightWidget: ${tagId} is not a valid scope.tag`);
    const existing = this.byTag.get(tagId);
    this.byTag.set(tagId, { ...(existing || { cards: [], sequence: this.sequence++ }), registration: { ...given } });
    return this.refresh(tagId);
  }

  // Carousel order: the person's saved order first (tags they never ordered after them), then
  // `isDefault`, `displayOrder` (lower first), then registration order.
  ordered() {
    const byDefault = [...this.byTag.values()].sort(
      (a, b) =>
        Number(!!b.options.isDefault) - Number(!!a.options.isDefault) ||
        number(a.options.displayOrder, 0) - number(b.options.displayOrder, 0) ||
        a.sequence - b.sequence,
    );
    const rank = new Map(this.saved.order.map((tagId, index) => [tagId, index]));
    return byDefault
      .map((entry, index) => ({ entry, key: rank.has(entry.tagId) ? rank.get(entry.tagId) : this.saved.order.length + index }))
      .sort((a, b) => a.key - b.key)
      .map(({ entry }) => entry);
  }

  // Shown at load: pinned (never unpinned) and auto-created, or added by the person from the menu.
  wanted(entry) {
    if (this.saved.unpinned.includes(entry.tagId)) return false;
    return entry.options.autoCreateInstance !== false || this.saved.pinned.includes(entry.tagId);
  }

  // One place earlier (-1) or later (1) among the shown entries; false when it cannot move.
  move(entry, direction) {
    const shown = this.ordered().filter((item) => item.cards.length > 0);
    const index = shown.indexOf(entry);
    const target = index + direction;
    if (index < 0 || target < 0 || target >= shown.length) return false;
    // The whole order is saved (shown and not), so a tag the person placed keeps its place.
    const all = this.ordered();
    const to = all.indexOf(shown[target]);
    all.splice(all.indexOf(entry), 1);
    all.splice(to, 0, entry);
    this.saved.order = all.map((item) => item.tagId);
    return true;
  }

  unpin(entry) {
    this.saved.unpinned = [...new Set([...this.saved.unpinned, entry.tagId])];
    this.saved.pinned = this.saved.pinned.filter((tagId) => tagId !== entry.tagId);
  }

  // What the person adds goes at the end of the carousel.
  pin(entry) {
    this.saved.unpinned = this.saved.unpinned.filter((tagId) => tagId !== entry.tagId);
    if (entry.options.autoCreateInstance === false) this.saved.pinned = [...new Set([...this.saved.pinned, entry.tagId])];
    this.saved.order = [...this.ordered().filter((item) => item !== entry), entry].map((item) => item.tagId);
  }
}
