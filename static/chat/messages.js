// The messages of a conversation as elements: what a person wrote, and an answer with its footer
// (the verification grade, the traces, the cited sources, the feedback) and the tool calls it
// waits for (chat/approvals). The same elements serve a streamed answer and a stored one, so a
// reload shows what the stream showed. Each message is an `article` with `data-message-role`, and
// `data-message-id` once stored (docs/widgets.md, "What the page knows (server → browser)").

import { copyButton } from "chat/copy";
import { el } from "chat/dom";
import { fileList } from "chat/files";
import { MessageRenderer } from "chat/render";

export class Messages {
  // `features`: the page's (traces and verifyResponse say what an answer's footer shows);
  // `tags`: what an answer's widget tags become (chat/render); `feedback`: chat/feedback;
  // `approvals`: chat/approvals, the cards of the tool calls an answer waits for.
  // `branches`: {edit(article, text, parentMessageId, files), regenerate(article), step(messageId)}, what
  // Edit, Regenerate and ‹ n/m › ask of chat/turn and chat/conversation (docs/api.md, "Branches").
  constructor({ features, tags, feedback, approvals, branches }) {
    this.branches = branches;
    this.features = features;
    this.tags = tags;
    this.feedback = feedback;
    this.approvals = approvals;
    this.answers = new WeakMap(); // article → its Answer, for a turn that goes on writing it
  }

  // A question; once stored (`messageId`), it can be edited and sent again as a new version.
  user({ text, files, messageId = null, parentMessageId = null, siblingIds = [] }) {
    const article = el(
      "article",
      { class: "message", "data-message-role": "user", "data-message-id": messageId, "aria-label": "You said" },
      el("div", { class: "message-text", text }),
      fileList(files),
    );
    if (messageId) this.asked(article, { text, files, messageId, parentMessageId, siblingIds });
    return article;
  }

  // A question once stored: its Edit, and its versions when it has more than one.
  asked(article, { text, files = [], messageId, parentMessageId, siblingIds = [] }) {
    if (article.querySelector(".message-tools")) return;
    const edit = el("button", {
      type: "button",
      class: "button button-small copy edit-question",
      "aria-label": "Edit the question",
      "data-label": "Edit",
      onclick: () => this.editing(article, text, parentMessageId, files),
    });
    article.append(el("div", { class: "message-tools" }, this.versions(messageId, siblingIds, "question"), edit));
  }

  // ‹ n/m › between the versions of a message, when it has more than one.
  versions(messageId, siblingIds, what) {
    if (!siblingIds || siblingIds.length < 2) return null;
    const index = siblingIds.indexOf(messageId);
    const step = (to, label, text) =>
      el("button", {
        type: "button",
        class: "button button-small copy",
        "aria-label": label,
        text,
        disabled: to < 0 || to >= siblingIds.length,
        onclick: () => this.branches.step(siblingIds[to]),
      });
    return el(
      "span",
      { class: "versions", role: "group", "aria-label": `Versions of this ${what}` },
      step(index - 1, `Previous version of this ${what}`, "‹"),
      el("span", { class: "versions-count", text: `${index + 1}/${siblingIds.length}` }),
      step(index + 1, `Next version of this ${what}`, "›"),
    );
  }

  // The question becomes a box with its text; sending it asks it again as a new version, with
  // the files it was asked with (listed under the box).
  editing(article, text, parentMessageId, files = []) {
    const box = el("textarea", { class: "edit-box", "aria-label": "Edited question", rows: "3" });
    box.value = text;
    const form = el(
      "form",
      { class: "edit-form" },
      box,
      fileList(files),
      el(
        "div",
        { class: "row" },
        el("button", { type: "submit", class: "button button-small button-primary", text: "Send" }),
        el("button", { type: "button", class: "button button-small", text: "Cancel", onclick: () => form.replaceWith(...shown) }),
      ),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (box.value.trim()) this.branches.edit(article, box.value, parentMessageId, files);
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Escape") form.replaceWith(...shown);
    });
    const shown = [...article.children];
    article.replaceChildren(form);
    box.focus();
  }

  answer(messageId = null) {
    const answer = new Answer({ messageId, features: this.features, tags: this.tags });
    this.answers.set(answer.article, answer);
    return answer;
  }

  answerOf(article) {
    return this.answers.get(article) ?? null;
  }

  // A message as the API stored it, in a conversation opened again; `approvals`: the tool calls
  // of the session (GET …/approvals), those of this answer shown as cards.
  stored(message, sessionId, given, approvals = []) {
    if (message.source === "user") {
      const { message: text, files, messageId, parentMessageId, siblingIds } = message;
      return this.user({ text, files, messageId, parentMessageId, siblingIds });
    }
    const answer = this.answer(message.messageId);
    answer.renderer.replace(message.message);
    if (message.error) answer.failed(message.error);
    else this.complete(answer, message, sessionId, given);
    if (message.stopReason === "user") answer.stopped();
    for (const approval of approvals) if (approval.messageId === message.messageId) this.approvals.show(answer, approval, sessionId);
    return answer.article;
  }

  // An answer the API stored (a `done` event's fields, or a stored message): its footer.
  complete(answer, message, sessionId, given = null) {
    answer.stored(message.messageId);
    answer.showGrade(gradeOf(message));
    answer.showTraces(message.traces);
    answer.showCitations(message.citations);
    this.feedback.attach(answer.footer, { sessionId, messageId: message.messageId, given });
    this.regenerable(answer, message);
  }

  // Once stored: answered again on request, and its versions (`siblingIds`) stepped through.
  regenerable(answer, message) {
    if (!answer.footer.querySelector(".regenerate")) {
      const regenerate = el("button", {
        type: "button",
        class: "button button-small copy regenerate",
        "aria-label": "Regenerate the answer",
        "data-label": "Regenerate",
        onclick: () => this.branches.regenerate(answer.article),
      });
      answer.footer.querySelector(".copy-wrap")?.after(regenerate, this.versions(message.messageId, message.siblingIds, "answer") ?? "");
    }
  }
}

export function gradeOf(message) {
  return (message.verifications || []).find((verification) => verification.grade)?.grade;
}

class Answer {
  constructor({ messageId, features, tags }) {
    this.features = features;
    this.body = el("div", { class: "message-body" });
    this.waiting = el("div", { class: "message-approvals" }); // the cards of the tool calls it waits for
    this.footer = el("div", { class: "message-footer" });
    this.article = el(
      "article",
      { class: "message", "data-message-role": "assistant", "data-message-id": messageId, "aria-label": "The assistant said" },
      this.body,
      this.waiting,
      this.footer,
    );
    this.renderer = new MessageRenderer(this.body, { tags });
  }

  // Still being answered: assistive technology waits for the whole answer.
  streaming() {
    this.article.setAttribute("aria-busy", "true");
  }

  stored(messageId) {
    this.article.dataset.messageId = messageId;
    this.article.removeAttribute("aria-busy");
    // Copy gives the answer as the model wrote it, Markdown and widget tags included.
    if (!this.footer.querySelector(".copy-answer")) {
      this.footer.prepend(copyButton({ label: "Copy the answer", className: "copy-answer", text: () => this.renderer.text }));
    }
  }

  // Stopped by its user (docs/api.md, "Resume, stop and approvals"): what had streamed is the answer.
  stopped() {
    this.article.classList.add("message-stopped");
    this.footer.querySelector(".message-stopped-note")?.remove();
    this.footer.prepend(el("p", { class: "message-stopped-note", role: "note", text: "Stopped" }));
  }

  failed(reason) {
    this.article.removeAttribute("aria-busy");
    this.article.classList.add("message-failed");
    this.article.setAttribute("aria-label", "The assistant could not answer");
    this.footer.replaceChildren(el("p", { class: "message-failure", role: "note", text: `Not answered: ${reason}` }));
  }

  showGrade(grade) {
    if (!this.features.verifyResponse || !grade) return;
    let badge = this.footer.querySelector(".grade");
    if (!badge) {
      badge = el("span", { class: "grade" });
      this.footer.prepend(badge);
    }
    badge.dataset.grade = grade;
    badge.textContent = `Verified: grade ${grade}`;
  }

  // The traces of an answer, collapsed: one line per step, its details as text.
  showTraces(traces) {
    let details = this.footer.querySelector(".traces");
    if (!this.features.traces || !traces?.length) {
      details?.remove();
      return;
    }
    if (!details) {
      details = el("details", { class: "traces" }, el("summary"), el("ol"));
      this.footer.append(details);
    }
    details.querySelector("summary").textContent = `Traces (${traces.length})`;
    details
      .querySelector("ol")
      .replaceChildren(
        ...traces.map((trace) =>
          el(
            "li",
            {},
            el("strong", { text: traceLabel(trace) }),
            el("span", { text: ` ${traceFacts(trace)}` }),
            el("pre", { text: JSON.stringify(trace, null, 2) }),
          ),
        ),
      );
  }

  // The knowledge base results the answer cites, numbered as the model was given them
  // (docs/api.md, "Answers: failed ones, cited ones"). Every part is text; a source is a link
  // only when it is an http(s) address.
  showCitations(citations) {
    this.footer.querySelector(".citations")?.remove();
    if (!citations?.length) return;
    const items = citations.map((citation) => {
      const source = /^https?:\/\//i.test(citation.sourceUrl || "")
        ? el("a", { href: citation.sourceUrl, target: "_blank", rel: "noopener noreferrer nofollow", text: citation.title })
        : el("span", { text: citation.title + (citation.sourceUrl ? ` (${citation.sourceUrl})` : "") });
      return el("li", { value: String(citation.n) }, source, el("blockquote", { text: citation.text }));
    });
    this.footer.prepend(
      el("details", { class: "citations" }, el("summary", { text: `Sources (${citations.length})` }), el("ol", {}, ...items)),
    );
  }
}

function traceLabel(trace) {
  switch (trace.stage) {
    case "tool":
      return `Tool ${trace.function || trace.toolId}${trace.outcome && trace.outcome !== "ok" ? ` (${trace.outcome})` : ""}`;
    case "model":
      return `Model ${trace.model}`;
    case "selection":
      return "Directive selection";
    case "verification":
      return `Verification${trace.grade ? `: grade ${trace.grade}` : ""}`;
    case "reprompt":
      return "Corrected answer";
    default:
      return trace.stage || "Step";
  }
}

function traceFacts(trace) {
  const facts = [];
  if (trace.durationMs !== undefined) facts.push(`${Math.round(trace.durationMs)} ms`);
  if (trace.inputTokens !== undefined) facts.push(`${trace.inputTokens} → ${trace.outputTokens} tokens`);
  return facts.join(" · ");
}
