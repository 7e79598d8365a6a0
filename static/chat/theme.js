// The page's theme (docs/api.md, "The chat page"): the system's light or dark unless the person
// picks one, kept in their prefs under `theme` ("light" or "dark"; removed for the system's).
// The server renders the choice on <html>, so a reload never flashes the other theme.

const THEMES = ["light", "dark"];

export class ThemeChoice {
  // `select`: the topbar's <select> (values "", "light", "dark"); `save(partialPrefs)`: chat/api.
  constructor({ select, save, notices }) {
    this.select = select;
    this.save = save;
    this.notices = notices;
    select.value = THEMES.includes(document.documentElement.dataset.theme) ? document.documentElement.dataset.theme : "";
    select.addEventListener("change", () => this.choose(select.value));
  }

  async choose(theme) {
    const root = document.documentElement;
    if (THEMES.includes(theme)) root.dataset.theme = theme;
    else delete root.dataset.theme;
    try {
      await this.save({ theme: THEMES.includes(theme) ? theme : null }); // null removes the key
    } catch (error) {
      this.notices.showError(error);
    }
  }
}
