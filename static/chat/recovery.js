// The connection went away mid-turn. The service finishes the turn and stores its answer anyway
// (docs/decisions.md, "Converse"), so the page waits for it to appear in the conversation, and
// shows it in place of what had streamed.

import { ApiError } from "chat/api";
import { el } from "chat/dom";

const GIVE_UP_MS = 120000;
const FRESH_MS = 5000; // how much earlier than the message a session it started may say it began

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Recovery {
  constructor({ api, sessions, conversation, notices, chatAppId }) {
    this.api = api;
    this.sessions = sessions;
    this.conversation = conversation;
    this.notices = notices;
    this.chatAppId = chatAppId;
  }

  // Polls, backing off, until the stored answer of `turn` (chat/turn) is found or time is up.
  async wait(turn) {
    this.notices.say("The connection was lost. Waiting for the answer…");
    const started = Date.now();
    for (let attempt = 0; Date.now() - started < GIVE_UP_MS; attempt += 1) {
      await sleep(Math.min(500 * 2 ** attempt, 5000));
      try {
        if (!turn.sessionId && !(await this.findSession(turn))) continue;
        const stored = await this.storedAnswer(turn);
        if (!stored) continue;
        turn.recovered(stored);
        return;
      } catch (error) {
        if (error instanceof ApiError && error.code !== "NETWORK" && error.code !== "INVALID_SESSION_ID") {
          this.notices.showError(error);
          return;
        }
      }
    }
    turn.answer.article.removeAttribute("aria-busy");
    const reload = el("button", {
      type: "button",
      class: "button button-small",
      text: "Reload the conversation",
      onclick: () => turn.sessionId && this.conversation.open(turn.sessionId),
    });
    this.notices.alert("The connection was lost and the answer has not arrived yet.", reload);
  }

  // Lost before the turn said which session it started: the newest one, if it is this turn's.
  async findSession(turn) {
    const { sessions } = await this.api.sessions(this.chatAppId);
    const fresh = sessions.find(
      (session) => Date.parse(session.createDate) >= turn.sentAt - FRESH_MS && !this.sessions.has(session.sessionId),
    );
    if (!fresh) return false;
    turn.adopt(fresh.sessionId);
    this.sessions.replace(sessions);
    return true;
  }

  // The first answer after the turn's message, once it is stored.
  async storedAnswer(turn) {
    const { messages } = await this.api.messages(turn.sessionId, 50);
    let asked = messages.findIndex((message) => message.messageId === turn.userMessageId);
    if (asked < 0) asked = messages.findLastIndex((message) => message.source === "user" && message.message === turn.text);
    return asked >= 0 ? messages.slice(asked + 1).find((message) => message.source === "assistant") : null;
  }
}
