// A tool call that waits for a person (docs/api.md, "Approvals"): a card in its answer naming the
// function and its arguments, with Approve and Deny. A decision goes to POST …/approvals/{id};
// when it is the last one its turn waited for, the answer of that request streams the turn going
// on, which the page follows into the same answer (chat/turn).

import { ApiError } from "chat/api";
import { el } from "chat/dom";

const DECIDED = { approved: "Approved", denied: "Denied" };

export class Approvals {
  // `goOn(response, answer, sessionId)`: follows the turn going on, streamed in `response`;
  // `resume(sessionId)`: follows the session's turn, one decided elsewhere going on.
  constructor({ api, notices, goOn, resume }) {
    this.api = api;
    this.notices = notices;
    this.goOn = goOn;
    this.resume = resume;
  }

  // The card of `approval` (an `approval` event's fields, or one of GET …/approvals) in `answer`.
  show(answer, approval, sessionId) {
    const { approvalId } = approval;
    const shown = answer.waiting.querySelector(`[data-approval-id="${CSS.escape(approvalId)}"]`);
    const card = el(
      "section",
      { class: "approval", "data-approval-id": approvalId, role: "group", "aria-label": `Approval: ${approval.function}`, tabindex: "-1" },
      el("p", { class: "approval-title" }, el("strong", { text: "The assistant wants to run " }), el("code", { text: approval.function })),
      el("pre", { class: "approval-arguments", "aria-label": "Arguments", text: JSON.stringify(approval.arguments ?? {}, null, 2) }),
      el("p", { class: "approval-facts", text: `Tool ${approval.toolId}` }),
      el("p", { class: "approval-expiry", text: expiry(approval.expiresAt) }),
      el("div", { class: "approval-actions" }),
    );
    if (shown) shown.replaceWith(card);
    else answer.waiting.append(card);
    if (approval.status && approval.status !== "pending") this.decided(card, approval.status, approval.reason);
    else this.ask(card, answer, approval, sessionId);
    return card;
  }

  ask(card, answer, { approvalId }, sessionId) {
    const decide = (decision) => this.decide(card, answer, { sessionId, approvalId, decision });
    card.dataset.status = "pending";
    card
      .querySelector(".approval-actions")
      .replaceChildren(
        el("button", { type: "button", class: "button button-primary button-small", text: "Approve", onclick: () => decide("approve") }),
        el("button", { type: "button", class: "button button-small", text: "Deny", onclick: () => decide("deny") }),
      );
  }

  decided(card, status, reason = "") {
    card.dataset.status = status;
    card.querySelector(".approval-title strong").textContent = "The assistant asked to run ";
    card.querySelector(".approval-expiry").remove();
    const said = DECIDED[status] || status;
    card
      .querySelector(".approval-actions")
      .replaceChildren(el("p", { class: "approval-decided", text: reason ? `${said}: ${reason}` : said }));
  }

  async decide(card, answer, { sessionId, approvalId, decision }) {
    const hadFocus = card.contains(document.activeElement);
    const buttons = card.querySelectorAll("button");
    for (const button of buttons) button.disabled = true;
    let response;
    try {
      response = await this.api.decide(sessionId, approvalId, decision);
    } catch (error) {
      if (error instanceof ApiError && error.code === "ALREADY_DECIDED") {
        // Decided in another tab or by an approver: the cards as decided, and the turn if it goes on.
        await this.refresh(answer, sessionId);
        if (!answer.waiting.querySelector('[data-status="pending"]')) await this.resume(sessionId);
        return;
      }
      for (const button of buttons) button.disabled = false;
      this.notices.showError(error);
      return;
    }
    this.decided(card, decision === "approve" ? "approved" : "denied");
    if (hadFocus) card.focus(); // its buttons are gone: the focus stays on the card, not lost to the page
    if ((response.headers.get("Content-Type") || "").includes("text/event-stream")) {
      await this.goOn(response, answer, sessionId);
    } else {
      // Not the last call its turn waits for: the turn goes on once the others are decided.
      await response.body?.cancel();
    }
  }

  // Decided elsewhere (another tab, an approver): the cards as the service has them.
  async refresh(answer, sessionId) {
    try {
      const { approvals } = await this.api.approvals(sessionId);
      for (const approval of approvals) {
        if (answer.waiting.querySelector(`[data-approval-id="${CSS.escape(approval.approvalId)}"]`)) this.show(answer, approval, sessionId);
      }
    } catch (error) {
      this.notices.showError(error);
    }
  }
}

function expiry(expiresAt) {
  const expires = new Date(expiresAt);
  return Number.isNaN(expires.getTime()) ? "" : `Waits for a decision until ${expires.toLocaleString()}; then it is denied.`;
}
