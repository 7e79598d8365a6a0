// The message box and its Send button, and the suggestions above them. Enter sends, Shift+Enter
// starts a new line; while an answer streams, Stop takes Send's place (docs/api.md, "Resume, stop
// and approvals"); Send is disabled while a file uploads or a rate limit's window has not ended.
// The box's accessible name is the chat app's `promptInputFieldLabel`.

export class Composer {
  // `form`: the composer form; `suggestions`: the suggestion buttons' group, if the chat app has
  // any; `onSend(text)`: sends a message; `onStop()`: stops the answer streaming; `uploading()`:
  // whether a file is still uploading.
  constructor({ form, suggestions, onSend, onStop, uploading }) {
    this.form = form;
    this.prompt = form.querySelector("textarea");
    this.button = form.querySelector(".send");
    this.stop = form.querySelector(".stop");
    this.uploading = uploading;
    this.running = false;
    this.blockedUntil = 0;

    form.addEventListener("submit", (event) => {
      event.preventDefault();
      onSend(this.prompt.value);
    });
    this.prompt.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        onSend(this.prompt.value);
      }
    });
    this.stop.addEventListener("click", () => onStop());
    this.prompt.addEventListener("input", () => this.resize());
    suggestions?.addEventListener("click", (event) => {
      const button = event.target.closest(".suggestion");
      if (button) onSend(button.textContent);
    });
  }

  // Whether a message can go now: no turn running, and no rate limit in force.
  get ready() {
    return !this.running && Date.now() >= this.blockedUntil;
  }

  set busy(running) {
    this.running = running;
    this.update();
  }

  // Sending waits until `time` (a rate limit's window ends); Send comes back by itself then.
  blockUntil(time) {
    this.blockedUntil = time;
    this.update();
    setTimeout(() => this.update(), time - Date.now() + 10);
  }

  update() {
    const focused = document.activeElement;
    this.button.disabled = !this.ready || this.uploading();
    this.button.hidden = this.running;
    this.stop.hidden = !this.running;
    // The focus follows the button that takes the other's place, for a keyboard user.
    if (this.running && focused === this.button) this.stop.focus();
    else if (!this.running && focused === this.stop) this.prompt.focus();
  }

  // The text of a message leaving: the box is emptied for the next one.
  clear() {
    this.prompt.value = "";
    this.resize();
  }

  // A message that could not go, back in the box (unless the person typed something else meanwhile).
  restore(text) {
    if (!this.prompt.value) this.prompt.value = text;
  }

  // chatRuntime.suggestQuestion: the text in the box, focused and highlighted as asked.
  suggest(text, { focus, highlight }) {
    this.prompt.value = text;
    this.resize();
    if (focus) this.prompt.focus();
    if (highlight) {
      this.prompt.classList.remove("prompt-highlight");
      void this.prompt.offsetWidth; // restart the animation when suggested twice in a row
      this.prompt.classList.add("prompt-highlight");
    }
  }

  focus() {
    this.prompt.focus();
  }

  resize() {
    this.prompt.style.height = "auto";
    this.prompt.style.height = `${Math.min(this.prompt.scrollHeight + 2, window.innerHeight * 0.4)}px`;
  }
}
