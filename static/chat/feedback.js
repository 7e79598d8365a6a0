// Thumbs up and down on an answer, with an optional comment, through POST /api/chat/feedback; the
// feedback already given shows pressed when the conversation is opened again.

import { el, icon } from "chat/dom";

const THUMB = "M7 10v11H3V10h4zm0 0l4-8a3 3 0 0 1 3 3v4h5.5a2 2 0 0 1 2 2.3l-1.4 8A2 2 0 0 1 18.1 21H7";
const THUMBS = [
  ["up", "Thumbs up"],
  ["down", "Thumbs down"],
];

export class Feedback {
  // `types`: the feedback type of each thumb, {up, down}, as the page's config names them.
  constructor({ api, notices, types }) {
    this.api = api;
    this.notices = notices;
    this.types = types;
  }

  // The thumbs of one answer into its `footer`; `given` is the person's feedback on it, if any.
  attach(footer, { sessionId, messageId, given = null }) {
    for (const old of footer.querySelectorAll(".feedback, .feedback-form, .feedback-sent")) old.remove();
    const thumbs = {};
    const group = el("div", { class: "feedback", role: "group", "aria-label": "Feedback on this answer" });
    for (const [kind, label] of THUMBS) {
      const pressed = given?.type === this.types[kind];
      const thumb = icon(THUMB);
      if (kind === "down") thumb.style.transform = "rotate(180deg)";
      thumbs[kind] = el(
        "button",
        {
          type: "button",
          class: "button button-small",
          "aria-label": label,
          title: label,
          "aria-pressed": pressed ? "true" : "false",
          "data-feedback": kind,
          onclick: () => this.ask(footer, { sessionId, messageId, kind, thumbs }),
        },
        thumb,
      );
      group.append(thumbs[kind]);
    }
    footer.append(group);
    if (given?.userComment) footer.append(el("p", { class: "feedback-sent", text: `Your comment: ${given.userComment}` }));
  }

  // The comment form under the answer, for the thumb just pressed.
  ask(footer, { sessionId, messageId, kind, thumbs }) {
    footer.querySelector(".feedback-form")?.remove();
    const comment = el("textarea", { "aria-label": "Comment (optional)", placeholder: "Comment (optional)", maxlength: "1000" });
    const close = () => {
      form.remove();
      thumbs[kind].focus();
    };
    const submit = async (event) => {
      event.preventDefault();
      const feedback = { sessionId, messageId, type: this.types[kind] };
      if (comment.value.trim()) feedback.userComment = comment.value.trim();
      try {
        await this.api.sendFeedback(feedback);
      } catch (error) {
        this.notices.showError(error);
        return;
      }
      for (const [name, button] of Object.entries(thumbs)) button.setAttribute("aria-pressed", name === kind ? "true" : "false");
      footer.querySelector(".feedback-sent")?.remove();
      const thanks = feedback.userComment ? `Thank you. Your comment: ${feedback.userComment}` : "Thank you for your feedback.";
      footer.append(el("p", { class: "feedback-sent", text: thanks }));
      this.notices.say("Feedback sent.");
      close();
    };
    const form = el(
      "form",
      { class: "feedback-form", onsubmit: submit },
      comment,
      el(
        "div",
        { class: "row" },
        el("button", { type: "submit", class: "button button-small button-primary", text: "Send feedback" }),
        el("button", { type: "button", class: "button button-small", text: "Cancel", onclick: close }),
      ),
    );
    comment.addEventListener("keydown", (event) => {
      if (event.key === "Escape") close();
    });
    footer.append(form);
    comment.focus();
  }
}
