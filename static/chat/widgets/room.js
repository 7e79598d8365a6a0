// The conversation keeps the room (docs/widgets.md, "The shelf in a conversation"): once the
// messages pane has a message, the spotlight goes to its header only and the hero to its bar, so
// the answers get the window. Both are states docs/widgets.md gives them (spotlight hidden, hero
// collapsed); the person may open either again, and that choice is kept in their prefs under
// `shelf`: {spotlight: "shown" | "hidden", hero: "expanded" | "collapsed"}. An empty
// conversation (a new chat) gives the shelf back as it was.

const PREF = "shelf";

export class Room {
  // `save(partialPrefs)`: stores the person's prefs (chat/api); `prefs`: theirs, as the page was served.
  constructor({ spotlight, hero, save, prefs }) {
    this.spotlight = spotlight;
    this.hero = hero;
    this.save = save;
    const stored = prefs && typeof prefs[PREF] === "object" && prefs[PREF] ? prefs[PREF] : {};
    this.choice = {
      spotlight: stored.spotlight === "shown" ? "shown" : "hidden",
      hero: stored.hero === "expanded" ? "expanded" : "collapsed",
    };
    this.conversing = false;
    this.welcome = null; // the shelf before the conversation took the room, given back at a new chat
    spotlight.onPersonToggle = () => this.chose({ spotlight: spotlight.visible ? "shown" : "hidden" });
    hero.onPersonToggle = () => this.chose({ hero: hero.collapsed ? "collapsed" : "expanded" });
  }

  // Whether the conversation shown has messages: called as the messages pane changes.
  update(conversing) {
    if (conversing === this.conversing) return;
    this.conversing = conversing;
    if (conversing) {
      this.welcome = { spotlight: this.spotlight.visible, heroCollapsed: this.hero.collapsed };
      this.spotlight.setVisible(this.choice.spotlight === "shown");
      this.hero.setCollapsed(this.choice.hero === "collapsed");
    } else if (this.welcome) {
      this.spotlight.setVisible(this.welcome.spotlight);
      this.hero.setCollapsed(this.welcome.heroCollapsed);
    }
  }

  // The person opened or closed a part of the shelf: in a conversation, that is how they want it there.
  chose(part) {
    if (!this.conversing) return;
    this.choice = { ...this.choice, ...part };
    this.save({ [PREF]: this.choice }).catch((error) => console.error("chatRuntime: the shelf's prefs were not saved", error));
  }
}
